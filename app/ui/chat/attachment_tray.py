"""The files waiting to be sent with the next message: one chip each (name, size, a remove button) above the
composer. Files come from the Attach button, a drop on the window or a paste; each is read at once, so a file
that cannot be attached is refused with its reason before anything is sent. GUI thread only.
"""

from __future__ import annotations

from collections.abc import Iterable

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QWidget

from app.store.attachments import (
    MAX_MESSAGE_ATTACHMENTS, Attachment, AttachmentError, check_total, read_attachment,
)


def local_files(mime: QMimeData) -> list[str]:
    """The local files a drop or a paste carries ([] for text, images, or links elsewhere)."""
    if not mime.hasUrls():
        return []
    urls = mime.urls()
    return [url.toLocalFile() for url in urls] if urls and all(url.isLocalFile() for url in urls) else []


class AttachmentTray(QWidget):
    """The chips of the files to send; hidden while there are none. GUI thread only."""

    sig_changed = Signal()
    """Files were added or removed."""
    sig_refused = Signal(str)
    """Files could not be attached: one sentence per file, saying why."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._attachments: list[Attachment] = []
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(0, 0, 0, 0)
        self._row.setSpacing(6)
        self._row.addStretch(1)
        self.hide()

    def attachments(self) -> tuple[Attachment, ...]:
        return tuple(self._attachments)

    def add_paths(self, paths: Iterable[str]) -> None:
        """Attach these files; those that cannot be (too large, binary, unreadable) are refused with a reason, at
        most a few sentences however many files were dropped."""
        paths = list(paths)
        problems: list[str] = []
        left_out = ""
        for tried, path in enumerate(paths):
            if len(self._attachments) >= MAX_MESSAGE_ATTACHMENTS or tried >= 2 * MAX_MESSAGE_ATTACHMENTS:
                left_out = (f"{len(paths) - tried} more files were not attached: one message carries at most "
                            f"{MAX_MESSAGE_ATTACHMENTS} files.")
                break
            try:
                attachment = read_attachment(path)
                kept = [a for a in self._attachments if a.name != attachment.name]  # the same file again replaces it
                check_total([*kept, attachment])
            except AttachmentError as exc:
                problems.append(str(exc))
                continue
            self._attachments = [*kept, attachment]
        self._show()
        if len(problems) > 4:
            problems = [*problems[:3], f"{len(problems) - 3} more files could not be attached."]
        if problems or left_out:
            self.sig_refused.emit(" ".join([*problems, left_out]).strip())

    def set_attachments(self, attachments: Iterable[Attachment]) -> None:
        self._attachments = list(attachments)
        self._show()

    def clear(self) -> None:
        self.set_attachments(())

    def remove(self, name: str) -> None:
        self.set_attachments(a for a in self._attachments if a.name != name)

    def _show(self) -> None:
        while self._row.count() > 1:  # every chip; the stretch stays last
            item = self._row.takeAt(0)
            item.widget().deleteLater()
        for n, attachment in enumerate(self._attachments):
            self._row.insertWidget(n, self._chip(attachment))
        self.setVisible(bool(self._attachments))
        self.sig_changed.emit()

    def _chip(self, attachment: Attachment) -> QFrame:
        chip = QFrame()
        chip.setObjectName("AttachmentChip")
        row = QHBoxLayout(chip)
        row.setContentsMargins(8, 2, 2, 2)
        row.setSpacing(2)
        label = QLabel(attachment.label)
        label.setToolTip(f"Sent with the message as {attachment.name} in a fenced block")
        row.addWidget(label)
        remove = QPushButton("\N{MULTIPLICATION SIGN}")
        remove.setObjectName("FlatButton")
        remove.setCursor(Qt.CursorShape.PointingHandCursor)
        remove.setToolTip(f"Remove {attachment.name}")
        remove.setAccessibleName(f"Remove {attachment.name}")
        remove.clicked.connect(lambda: self.remove(attachment.name))
        row.addWidget(remove)
        return chip
