"""The model bar above the conversation: target picker, draft picker, the Speculative switch and the load state.

Selections made in code (opening a chat) do not emit the `sig_*_chosen` signals; only the user's choices do.
GUI thread only.
"""

from __future__ import annotations

import html
from typing import Optional

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QSizePolicy, QWidget
from superqt import QFlowLayout

from app.ui.models.library_model import NGRAM_KEY, PATH_ROLE, DraftListModel, LibraryModel, TwoLineDelegate
from app.ui.widgets import style
from app.ui.widgets.toggle_switch import ToggleSwitch

MIN_NAME_CHARS = 14
# A picker never asks for more than this, so its group fits beside its caption at 2x scale on a 1366x768 screen.
MAX_PICKER_WIDTH = 300


def _group(*widgets: QWidget) -> QWidget:
    """Widgets kept together on one row of the bar."""
    box = QWidget()
    row = QHBoxLayout(box)
    row.setContentsMargins(0, 0, 0, 0)
    row.setSpacing(8)
    for widget in widgets:
        row.addWidget(widget)
    return box


class _NameCombo(QComboBox):
    """A picker that asks for room for the whole name it shows, up to MAX_PICKER_WIDTH (the list shows it whole),
    and never below MIN_NAME_CHARS characters."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.currentIndexChanged.connect(self.updateGeometry)

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()  # room for MIN_NAME_CHARS characters, the arrow and the frame
        metrics = self.fontMetrics()
        frame = hint.width() - metrics.horizontalAdvance("x" * MIN_NAME_CHARS)
        text = self.currentText() or self.placeholderText()
        width = max(hint.width(), metrics.horizontalAdvance(text) + frame)
        return QSize(min(width, max(hint.width(), MAX_PICKER_WIDTH)), hint.height())


class ModelBar(QWidget):
    """Target and draft pickers with the Speculative switch. GUI thread only."""

    sig_target_picked = Signal(str)
    """The user picked this target file in the bar (a request: the ModelSession decides, then says sig_target_chosen)."""
    sig_draft_picked = Signal(str)
    """The user picked this draft: a file path, or NGRAM_KEY."""
    sig_speculative_toggled = Signal(bool)
    """The user flipped the Speculative switch."""
    sig_chat_settings_requested = Signal()
    """The user asked for this chat's settings."""

    def __init__(self, library: LibraryModel, drafts: DraftListModel, parent=None):
        super().__init__(parent)
        self.setObjectName("ModelBar")
        self.setAttribute(Qt.WidgetAttribute.WA_StyledBackground, True)
        self.library = library
        self.drafts = drafts
        # Groups that wrap onto a second (third) row when the window is narrow, rather than clip (issue 36); Chat
        # settings stays at the first row's right end, outside the flow, so a longer model name never moves it to
        # another row (issue 45).
        outer = QHBoxLayout(self)
        outer.setContentsMargins(16, 6, 12, 6)
        outer.setSpacing(14)
        groups = QWidget()
        layout = QFlowLayout(groups)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setHorizontalSpacing(14)
        layout.setVerticalSpacing(6)
        outer.addWidget(groups, 1)

        self.target_combo = self._combo(library, "The model that writes the reply (the target)")
        self.target_combo.setPlaceholderText("Choose a model")
        self.target_combo.activated.connect(self._on_target_activated)
        layout.addWidget(_group(self._caption("Model"), self.target_combo))

        self.draft_combo = self._combo(drafts, "The small model that proposes tokens for the target to verify")
        self.draft_combo.setPlaceholderText("Draft")
        self.draft_combo.activated.connect(self._on_draft_activated)
        layout.addWidget(_group(self._caption("Draft"), self.draft_combo))

        self.speculative_switch = ToggleSwitch()
        self.speculative_switch.setToolTip(
            "Speculative decoding: the draft proposes tokens and the target verifies them in one batch. "
            "Takes effect on the next message; no reload."
        )
        self.speculative_switch.clicked.connect(self.sig_speculative_toggled)
        self.speculative_switch.toggled.connect(self._update_enabled)
        self.speculative_label = QLabel("Speculative")
        self.speculative_label.setBuddy(self.speculative_switch)
        self.load_state = QLabel("")
        self.load_state.setObjectName("Muted")
        layout.addWidget(_group(self.speculative_switch, self.speculative_label, self.load_state))
        self.settings_button = QPushButton("Chat settings")
        self.settings_button.setObjectName("FlatButton")
        self.settings_button.setToolTip("System prompt, sampling and length settings for this chat")
        self.settings_button.clicked.connect(self.sig_chat_settings_requested)
        outer.addWidget(self.settings_button, 0, Qt.AlignmentFlag.AlignTop)

    def _caption(self, text: str) -> QLabel:
        label = QLabel(text)
        label.setObjectName("BarLabel")
        return label

    def _combo(self, model, tooltip: str) -> QComboBox:
        combo = _NameCombo()
        combo.setModel(model)
        combo.setToolTip(tooltip)
        combo.setItemDelegate(TwoLineDelegate(combo))
        combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        combo.setMinimumContentsLength(MIN_NAME_CHARS)
        combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        combo.view().setMinimumWidth(440)
        combo.view().setMouseTracking(True)
        return combo

    # ----- state set by the window

    def current_target(self) -> Optional[str]:
        return self.target_combo.currentData(PATH_ROLE)

    def current_draft(self) -> Optional[str]:
        return self.draft_combo.currentData(PATH_ROLE) or None

    def select_target(self, path: Optional[str]) -> None:
        self.target_combo.setCurrentIndex(self.library.row_of(path))

    def select_draft(self, key: Optional[str], picked: bool = False) -> str:
        """Select `key` if it is offered and enabled (one larger than the target only when the user `picked` it),
        else the best option; returns the key selected ("" if none)."""
        row = self.drafts.row_of(key, suggested_only=not picked) if key else -1
        if row < 0:
            row = self.drafts.first_enabled_row()
        self.draft_combo.setCurrentIndex(row)
        option = self.drafts.option_at(row)
        return option.key if option else ""

    def set_target_placeholder(self, text: str) -> None:
        """What the model picker says while no model is chosen ("Scanning for models…", "No models found")."""
        self.target_combo.setPlaceholderText(text)

    def set_speculative(self, on: bool) -> None:
        self.speculative_switch.setChecked(on)
        self._update_enabled()

    def speculative(self) -> bool:
        return self.speculative_switch.isChecked()

    def set_load_state(self, text: str, tooltip: str = "", state: str = "busy") -> None:
        """Show the models' state: "ready", "busy" (loading, checking) or "failed", with a coloured dot."""
        theme = style.current()
        color = {"ready": theme.state_ready, "busy": theme.state_busy, "failed": theme.state_failed}.get(
            state, theme.text_disabled
        )
        self.load_state.setText(f'<span style="color:{color}">●</span>&nbsp;{html.escape(text)}')
        self.load_state.setToolTip(tooltip or text)

    def _update_enabled(self) -> None:
        self.draft_combo.setEnabled(self.speculative_switch.isChecked() and not self.drafts.is_checking())

    def refresh_enabled(self) -> None:
        self._update_enabled()

    # ----- user actions

    def _on_target_activated(self, row: int) -> None:
        path = self.target_combo.itemData(row, PATH_ROLE)
        if path:
            self.sig_target_picked.emit(path)

    def _on_draft_activated(self, row: int) -> None:
        key = self.draft_combo.itemData(row, PATH_ROLE)
        if key:
            self.sig_draft_picked.emit(key)


__all__ = ["ModelBar", "NGRAM_KEY"]
