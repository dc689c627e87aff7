"""The Get-models panel's token row: asks for a Hugging Face access token where a repository needs one (gated or
private), checks it with the Hub and stores it as huggingface_hub does. GUI thread only."""

from __future__ import annotations

from typing import Callable

from PySide6.QtWidgets import QHBoxLayout, QLineEdit, QPushButton, QWidget

from app.hub import token as hub_token
from app.hub.errors import HubError


class TokenRow(QWidget):
    """Hidden until ask(). `start(work, on_result, on_error)` runs the check on the panel's pool; `base_url()` is
    the Hub's address; then `on_saved(user)` or `on_failed(error)`."""

    def __init__(
        self,
        start: Callable,
        base_url: Callable[[], str],
        on_saved: Callable[[object], None],
        on_failed: Callable[[HubError], None],
    ):
        super().__init__()
        self._start, self._base_url = start, base_url
        self._on_saved, self._on_failed = on_saved, on_failed
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.token_edit = QLineEdit()
        self.token_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.token_edit.setPlaceholderText("Hugging Face access token (hf_…), from huggingface.co/settings/tokens")
        self.token_edit.returnPressed.connect(self.save)
        layout.addWidget(self.token_edit, 1)
        self.save_token_button = QPushButton("Save token")
        self.save_token_button.clicked.connect(self.save)
        layout.addWidget(self.save_token_button)
        self.hide()

    def ask(self) -> None:
        self.show()
        self.token_edit.setFocus()

    def save(self) -> None:
        """Check the pasted token with the Hub and store it."""
        token = self.token_edit.text().strip()
        if not token:
            return
        self.save_token_button.setEnabled(False)
        base_url = self._base_url()
        self._start(lambda _progress: hub_token.save_token(token, base_url=base_url), self._saved, self._failed)

    def _saved(self, user: object) -> None:
        self.save_token_button.setEnabled(True)
        self.token_edit.clear()
        self.hide()
        self._on_saved(user)

    def _failed(self, error: HubError) -> None:
        self.save_token_button.setEnabled(True)
        self._on_failed(error)
