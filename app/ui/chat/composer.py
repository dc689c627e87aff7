"""The composer: where the user writes. Enter sends, Shift+Enter starts a new line; the button turns into Stop.

GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)


class ComposerEdit(QPlainTextEdit):
    """A text box that grows with its text (up to a limit) and sends on Enter."""

    sig_submit = Signal()
    """Enter was pressed without Shift."""
    sig_cancel = Signal()
    """Escape was pressed."""

    MAX_LINES = 8

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setTabChangesFocus(True)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.document().contentsChanged.connect(self.updateGeometry)

    def keyPressEvent(self, event: QKeyEvent) -> None:
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if event.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
            else:
                self.sig_submit.emit()
            return
        if event.key() == Qt.Key.Key_Escape:
            self.sig_cancel.emit()
            return
        super().keyPressEvent(event)

    def sizeHint(self) -> QSize:
        line = self.fontMetrics().lineSpacing()
        lines = max(1, min(self.MAX_LINES, int(self.document().size().height())))
        margins = self.contentsMargins()
        height = lines * line + 2 * int(self.document().documentMargin()) + margins.top() + margins.bottom()
        return QSize(super().sizeHint().width(), max(height, 2 * line + 12))


class Composer(QWidget):
    """The message box with its Send/Stop button, an edit banner and a hint line. GUI thread only."""

    sig_send = Signal(str)
    """The user sent this text (the composer keeps it until the owner calls `clear_after_send`)."""
    sig_stop = Signal()
    """The user asked to stop the reply that is streaming."""
    sig_cancel_edit = Signal()
    """The user left edit mode without sending."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._busy = False
        self._editing = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 4, 24, 8)
        layout.setSpacing(4)

        self.edit_banner = QLabel("Editing a message: sending replaces it and every later message. Esc cancels.")
        self.edit_banner.setObjectName("EditBanner")
        self.edit_banner.hide()
        layout.addWidget(self.edit_banner)

        frame = QFrame()
        frame.setObjectName("ComposerFrame")
        row = QHBoxLayout(frame)
        row.setContentsMargins(8, 6, 6, 6)
        self.edit = ComposerEdit()
        self.setFocusProxy(self.edit)  # focusing the composer puts the cursor in its text box
        self.edit.setPlaceholderText("Message SpecChat…  (Enter sends, Shift+Enter adds a line)")
        self.edit.sig_submit.connect(self._on_submit)
        self.edit.sig_cancel.connect(self._on_escape)
        self.edit.textChanged.connect(self._update_button)
        row.addWidget(self.edit, 1)
        self.button = QPushButton("Send")
        self.button.setObjectName("PrimaryButton")
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.button.clicked.connect(self._on_button)
        row.addWidget(self.button, 0, Qt.AlignmentFlag.AlignBottom)
        layout.addWidget(frame)
        self._update_button()

    def text(self) -> str:
        return self.edit.toPlainText()

    def set_text(self, text: str) -> None:
        self.edit.setPlainText(text)
        cursor = self.edit.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.edit.setTextCursor(cursor)
        self.edit.setFocus()

    def clear_after_send(self) -> None:
        """The text was accepted (it is in the conversation now), so the box can be emptied."""
        self.edit.clear()
        self.set_editing(False)

    def is_busy(self) -> bool:
        return self._busy

    def set_busy(self, busy: bool) -> None:
        """While a reply streams the button is Stop; Enter still works but the owner decides what it does."""
        self._busy = busy
        self._update_button()

    def set_editing(self, editing: bool) -> None:
        self._editing = editing
        self.edit_banner.setVisible(editing)

    def is_editing(self) -> bool:
        return self._editing

    def _update_button(self) -> None:
        if self._busy:
            self.button.setText("Stop")
            self.button.setObjectName("StopButton")
            self.button.setEnabled(True)
            self.button.setToolTip("Stop the reply (it keeps what was written so far)")
        else:
            self.button.setText("Send")
            self.button.setObjectName("PrimaryButton")
            self.button.setEnabled(bool(self.text().strip()))
            self.button.setToolTip("Send (Enter)")
        # The object name picks the style; re-polish so the change shows.
        self.button.style().unpolish(self.button)
        self.button.style().polish(self.button)

    def _on_button(self) -> None:
        if self._busy:
            self.sig_stop.emit()
        else:
            self._on_submit()

    def _on_submit(self) -> None:
        if self._busy:
            return
        text = self.text()
        if text.strip():
            self.sig_send.emit(text)

    def _on_escape(self) -> None:
        if self._editing:
            self.set_editing(False)
            self.edit.clear()
            self.sig_cancel_edit.emit()
        elif self._busy:
            self.sig_stop.emit()
