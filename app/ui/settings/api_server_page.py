"""The API server's settings: on or off, where it listens, its key, and what it is doing. GUI thread only.

A page of its own, so the Settings window can hold it among its pages; until then ApiServerDialog shows it alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.common.units import format_bytes
from app.serve.key_store import key_problem
from app.common.http_client import is_loopback_host, listen_host_problem

EXPLANATION = (
    "Coding agents and editors use the models loaded here, speculating as this window does: OpenAI's clients "
    "(Continue, Aider, Cline, Codex CLI by the Responses API), Claude Code (Anthropic's Messages API), and VS Code, "
    "Zed or JetBrains by Ollama's API, on the same port. docs/api.md gives each one's settings."
)
REQUESTS_AT_ONCE_HINT = (
    "Your chats and these requests share the places Requests at once gives; a request beyond them waits for its "
    "turn, the footer counts it, and a streamed one gets its headers at once and a comment every few seconds."
)


@dataclass(frozen=True)
class ApiServerChoice:
    """What the page holds."""

    enabled: bool
    host: str
    port: int
    api_key: Optional[str]
    own_history: bool = False


class ApiServerPage(QWidget):
    """Switch, address, port and key of the local API, its state (set_state) and the size of its clients' history
    (set_history_size): the engine process keeps that history, so whoever opens the page asks it, and carries out
    Clear (sig_clear_history)."""

    sig_clear_history = Signal()
    """The user pressed Clear: the API clients' history is to be forgotten."""

    def __init__(self, choice: ApiServerChoice, parent=None):
        super().__init__(parent)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.enabled = QCheckBox("Serve the loaded models as a local API (OpenAI's, Anthropic's and Ollama's)")
        self.enabled.setChecked(choice.enabled)
        layout.addWidget(self.enabled)
        explanation = QLabel(EXPLANATION)
        explanation.setObjectName("Muted")
        explanation.setWordWrap(True)
        layout.addWidget(explanation)

        form = QFormLayout()
        self.host = QLineEdit(choice.host)
        self.host.setToolTip("127.0.0.1: programs on this machine only. Another address lets other machines in.")
        form.addRow("Address", self.host)
        self.port = QSpinBox()
        self.port.setRange(1, 65535)
        self.port.setValue(choice.port)
        form.addRow("Port", self.port)
        self.api_key = QLineEdit(choice.api_key or "")
        self.api_key.setEchoMode(QLineEdit.EchoMode.Password)
        self.api_key.setPlaceholderText("none")
        self.api_key.setToolTip(
            'Clients must send it as "Authorization: Bearer KEY" or "x-api-key: KEY". Kept in an owner-only file.'
        )
        form.addRow("API key", self.api_key)
        layout.addLayout(form)
        self._form = form
        self.requests_at_once: Optional[QSpinBox] = None  # show_requests_at_once adds it

        # Never the person's chats: a client could tell from provenance (or speed) what they hold.
        self.own_history = QCheckBox("Let API clients draft from a history of their own requests")
        self.own_history.setChecked(choice.own_history)
        self.own_history.setToolTip(
            "API requests never draft from or add to the history of your chats. With this "
            "on they keep one of their own, kept apart, which you can clear here."
        )
        history_row = QHBoxLayout()
        history_row.addWidget(self.own_history, 1)
        self.history_size = QLabel("")
        self.history_size.setObjectName("Muted")
        history_row.addWidget(self.history_size)
        self.clear_history = QPushButton("Clear")
        self.clear_history.setToolTip("Forget every text API clients' requests left in their history")
        self.clear_history.clicked.connect(self._clear_history)
        history_row.addWidget(self.clear_history)
        layout.addLayout(history_row)
        self.set_history_size(None)

        self.base_url = QLabel("")
        self.base_url.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.base_url)
        self.warning = QLabel("")
        self.warning.setObjectName("Muted")
        self.warning.setWordWrap(True)
        layout.addWidget(self.warning)
        self.state = QLabel("")
        self.state.setWordWrap(True)
        layout.addWidget(self.state)
        layout.addStretch(1)
        for signal in (self.host.textChanged, self.port.valueChanged, self.api_key.textChanged, self.enabled.toggled):
            signal.connect(self._update_hints)
        self._update_hints()

    def show_requests_at_once(self, twin: QSpinBox) -> None:
        """Show the Loading page's "Requests at once" here too: one setting, two boxes kept in step (`twin` is the
        one the Settings window reads when it saves)."""
        box = QSpinBox()
        box.setRange(twin.minimum(), twin.maximum())
        box.setSpecialValueText(twin.specialValueText())
        box.setValue(twin.value())
        box.setToolTip(twin.toolTip())
        # setValue with the value a box already has emits nothing, so the two never call each other in a loop.
        box.valueChanged.connect(twin.setValue)
        twin.valueChanged.connect(box.setValue)
        hint = QLabel(REQUESTS_AT_ONCE_HINT)
        hint.setObjectName("Muted")
        hint.setWordWrap(True)
        self._form.addRow("Requests at once", box)
        self._form.addRow("", hint)
        self.requests_at_once = box

    def choice(self) -> ApiServerChoice:
        return ApiServerChoice(
            self.enabled.isChecked(),
            self.host.text().strip() or "127.0.0.1",
            self.port.value(),
            self.api_key.text().strip() or None,
            self.own_history.isChecked(),
        )

    def problem(self) -> Optional[str]:
        """Why the page's values cannot be used, in one sentence, or None."""
        choice = self.choice()
        return listen_host_problem(choice.host) or key_problem(choice.api_key)

    def set_history_size(self, size: Optional[int]) -> None:
        """The API clients' history holds `size` bytes (None: not known yet)."""
        self.history_size.setText("…" if size is None else format_bytes(size) if size else "empty")
        self.clear_history.setEnabled(bool(size))

    def _clear_history(self) -> None:
        self.set_history_size(None)
        self.sig_clear_history.emit()

    def set_state(self, text: str) -> None:
        """What the server is doing now, in words."""
        self.state.setText(text)

    def _update_hints(self) -> None:
        choice = self.choice()
        shown = f"[{choice.host}]" if ":" in choice.host else choice.host
        self.base_url.setText(
            f"Base URL for clients: http://{shown}:{choice.port}/v1 (Claude Code and Ollama's clients: without /v1)"
        )
        open_to_others = choice.enabled and not is_loopback_host(choice.host)
        self.warning.setText(
            ("Other machines can reach this address" + ("." if choice.api_key else "; set an API key."))
            if open_to_others
            else ""
        )


class ApiServerDialog(QDialog):
    """The API server page alone in a dialog."""

    def __init__(self, choice: ApiServerChoice, state_text: str = "", parent=None):
        super().__init__(parent)
        self.setWindowTitle("API server")
        self.setMinimumWidth(480)
        layout = QVBoxLayout(self)
        self.page = ApiServerPage(choice, self)
        self.page.set_state(state_text)
        layout.addWidget(self.page)
        self.error = QLabel("")
        self.error.setWordWrap(True)
        layout.addWidget(self.error)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _accept(self) -> None:
        problem = self.page.problem()
        if problem:
            self.error.setText(problem)
            return
        self.accept()
