"""The composer: where the user writes. Enter sends, Shift+Enter starts a new line; the button turns into Stop.
Files and pictures attached with the Attach button, or pasted or dropped into the text box, wait as chips above it.

GUI thread only.
"""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QSize, Qt, Signal
from PySide6.QtGui import QFocusEvent, QImage, QKeyEvent
from PySide6.QtWidgets import (
    QFileDialog,
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from app.ui.widgets import style
from app.ui.widgets.dialog_folders import remember_folder, start_folder
from app.store.attachments import Attachment, Picture
from app.ui.attachments.attachment_tray import AttachmentTray, local_files


class ComposerEdit(QPlainTextEdit):
    """A text box that grows with its text (up to a limit) and sends on Enter."""

    sig_submit = Signal()
    """Enter was pressed without Shift."""
    sig_cancel = Signal()
    """Escape was pressed."""
    sig_files = Signal(list)
    """Files were pasted or dropped into the text box (their paths): they are attached, not inserted as text."""
    sig_image = Signal(QImage)
    """A picture's data (not a file) was pasted or dropped into the text box: it is attached as a picture."""
    sig_focused = Signal(bool)
    """The text box took (True) or lost keyboard focus: its frame shows the focus ring."""

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

    def focusInEvent(self, event: QFocusEvent) -> None:
        super().focusInEvent(event)
        self.sig_focused.emit(True)

    def focusOutEvent(self, event: QFocusEvent) -> None:
        super().focusOutEvent(event)
        self.sig_focused.emit(False)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:
        return bool(local_files(source)) or source.hasImage() or super().canInsertFromMimeData(source)

    def insertFromMimeData(self, source: QMimeData) -> None:
        files = local_files(source)
        if files:
            self.sig_files.emit(files)
        elif source.hasImage():
            image = source.imageData()
            if isinstance(image, QImage) and not image.isNull():
                self.sig_image.emit(image)
        else:
            super().insertFromMimeData(source)

    def sizeHint(self) -> QSize:
        line = self.fontMetrics().lineSpacing()
        lines = max(1, min(self.MAX_LINES, int(self.document().size().height())))
        margins = self.contentsMargins()
        # The style's frame around the viewport counts too: without it the last line hid behind a scroll bar.
        height = (
            lines * line
            + 2 * int(self.document().documentMargin())
            + margins.top()
            + margins.bottom()
            + 2 * self.frameWidth()
        )
        return QSize(super().sizeHint().width(), max(height, 2 * line + 12))

    def minimumSizeHint(self) -> QSize:
        # A scroll area asks for room for both scroll bars (66 pixels); two lines of text are enough.
        return QSize(super().minimumSizeHint().width(), 2 * self.fontMetrics().lineSpacing() + 12)


class Composer(QWidget):
    """The message box with its Send/Stop button, an edit banner and a hint line. GUI thread only."""

    sig_send = Signal(str)
    """The user sent this text, with `attachments()` (the composer keeps both until `clear_after_send`)."""
    sig_stop = Signal()
    """The user asked to stop the reply that is streaming, or the Send waiting for its sources."""
    sig_cancel_edit = Signal()
    """The user left edit mode without sending."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._busy = False
        self._sending = False  # a Send waits for its documents' sources (set_sending)
        self._editing = False
        layout = QVBoxLayout(self)
        layout.setContentsMargins(24, 4, 24, 8)
        layout.setSpacing(4)

        self.edit_banner = QLabel(
            "Editing a message: sending makes a new version of it, and the model answers it again; "
            "the old version and its replies are kept (‹ › switches). Esc cancels."
        )
        self.edit_banner.setObjectName("EditBanner")
        self.edit_banner.hide()
        layout.addWidget(self.edit_banner)
        self.tray = AttachmentTray()
        self.tray.sig_changed.connect(self._update_button)
        layout.addWidget(self.tray)

        # The text box across the frame, and under it Attach at the left and Send at the right, as in other chat
        # apps: the text starts at the frame's edge, and the buttons line up with each other whatever its height.
        frame = QFrame()
        frame.setObjectName("ComposerFrame")
        column = QVBoxLayout(frame)
        column.setContentsMargins(6, 6, 6, 6)
        column.setSpacing(2)
        self.edit = ComposerEdit()
        self.setFocusProxy(self.edit)  # focusing the composer puts the cursor in its text box
        self.edit.setPlaceholderText("Message SpecChat…  (Enter sends, Shift+Enter adds a line)")
        self.edit.sig_submit.connect(self._on_submit)
        self.edit.sig_cancel.connect(self._on_escape)
        self.edit.textChanged.connect(self._update_button)
        self.edit.sig_files.connect(self.tray.add_paths)
        self.edit.sig_image.connect(self.tray.add_image)
        self.edit.sig_focused.connect(lambda focused: style.set_focused(frame, focused))
        column.addWidget(self.edit)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        self.attach_button = QPushButton("Attach")
        self.attach_button.setObjectName("FlatButton")
        self.attach_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.attach_button.setToolTip(
            "Attach text or code files, or pictures (or drop them on the window, or paste them)"
        )
        self.attach_button.setAccessibleName("Attach files")
        self.attach_button.clicked.connect(self._choose_files)
        row.addWidget(self.attach_button)
        row.addStretch(1)
        self.button = QPushButton("Send")
        self.button.setObjectName("PrimaryButton")
        self.button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.button.clicked.connect(self._on_button)
        row.addWidget(self.button)
        column.addLayout(row)
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

    def attachments(self) -> tuple[Attachment, ...]:
        """The files to send with the text."""
        return self.tray.attachments()

    def add_files(self, paths: list[str]) -> None:
        """Attach these files to the next message (those that cannot be are refused: tray.sig_refused)."""
        self.tray.add_paths(paths)

    def set_attachments(self, attachments: tuple[Attachment, ...]) -> None:
        self.tray.set_attachments(attachments)

    def pictures(self) -> tuple[Picture, ...]:
        """The pictures to send with the text."""
        return self.tray.pictures()

    def set_pictures(self, pictures: tuple[Picture, ...]) -> None:
        self.tray.set_pictures(pictures)

    def clear_after_send(self) -> None:
        """The text was accepted (it is in the conversation now), so the box can be emptied."""
        self.edit.clear()
        self.tray.clear()
        self.set_editing(False)

    def is_busy(self) -> bool:
        return self._busy

    def set_busy(self, busy: bool) -> None:
        """While a reply streams the button is Stop; Enter still works but the owner decides what it does."""
        self._busy = busy
        self._update_button()

    def set_sending(self, sending: bool) -> None:
        """While a Send waits for what it is sent with (a project's documents) its text stays here, read-only, and
        the button is Stop, which leaves the text here to send again; the text goes once the message is sent."""
        self._sending = sending
        self.edit.setReadOnly(sending)
        self._update_button()

    def set_editing(self, editing: bool) -> None:
        self._editing = editing
        self.edit_banner.setVisible(editing)

    def is_editing(self) -> bool:
        return self._editing

    def _update_button(self) -> None:
        if self._busy or self._sending:
            self.button.setText("Stop")
            self.button.setObjectName("StopButton")
            self.button.setEnabled(True)
            self.button.setToolTip(
                "Stop the reply (it keeps what was written so far)"
                if self._busy
                else "Stop sending: the message stays here, and nothing is sent"
            )
        else:
            self.button.setText("Send")
            self.button.setObjectName("PrimaryButton")
            self.button.setEnabled(self._has_message())
            self.button.setToolTip("Send (Enter)")
        # The object name picks the style; re-polish so the change shows.
        self.button.style().unpolish(self.button)
        self.button.style().polish(self.button)

    def _on_button(self) -> None:
        self.edit.setFocus()  # a click on Send or Stop leaves the cursor where the next message is typed
        if self._busy or self._sending:
            self.sig_stop.emit()
        else:
            self._on_submit()

    def _has_message(self) -> bool:
        return bool(self.text().strip() or self.tray.attachments() or self.tray.pictures())

    def _choose_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Attach files or pictures", start_folder("attach"))
        if paths:
            remember_folder("attach", paths[0])
            self.add_files(paths)

    def _on_submit(self) -> None:
        if self._busy or self._sending:
            return
        if self._has_message():
            self.sig_send.emit(self.text())

    def escape(self) -> None:
        """Esc: stop a Send waiting for its sources, else cancel the edit of a sent message, else stop the reply
        streaming."""
        self._on_escape()

    def _on_escape(self) -> None:
        if self._sending:  # the Send first: the edit (and its text) stays
            self.sig_stop.emit()
        elif self._editing:
            self.set_editing(False)
            self.edit.clear()
            self.tray.clear()
            self.sig_cancel_edit.emit()
        elif self._busy:
            self.sig_stop.emit()
