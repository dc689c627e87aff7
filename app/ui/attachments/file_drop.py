"""Files dropped anywhere on the window are attached to the next message; refusals and the context they will
take show at once (the error banner, the footer's gauge: a picture's exact tokens once the engine counted them,
app.ui.attachments.picture_counts). GUI thread only."""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QDropEvent

from app.store.attachments import estimate_tokens
from app.ui.attachments.attachment_tray import local_files
from app.ui.attachments.picture_counts import PictureCounts


class FileDrop(QObject):
    """An event filter on the window: a drag of local files is accepted, and the drop attaches them."""

    def __init__(self, window) -> None:
        super().__init__(window)
        self._window = window
        self.picture_counts: Optional[PictureCounts] = None  # the exact tokens of the waiting pictures

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's override
        kind = event.type()
        if kind not in (QEvent.Type.DragEnter, QEvent.Type.DragMove, QEvent.Type.Drop):
            return False
        assert isinstance(event, QDropEvent)  # QDragEnterEvent and QDragMoveEvent are QDropEvents too
        files = local_files(event.mimeData())
        if not files:
            return False
        event.acceptProposedAction()
        if kind == QEvent.Type.Drop:
            self._window.composer.add_files(files)
            self._window.composer.setFocus()
        return True


def attach(window) -> FileDrop:
    """Let `window` (MainWindow) take dropped files, and show what attaching them means before sending."""
    drop = FileDrop(window)
    window.setAcceptDrops(True)
    window.installEventFilter(drop)
    window.chat_view.setAcceptDrops(False)  # the read-only transcript passes a drop on to the window
    tray = window.composer.tray
    tray.sig_refused.connect(window.show_error)

    def show_pending() -> None:
        pictures, exact = tray.picture_tokens()
        files = tray.attachments()
        window.footer.show_pending_tokens(estimate_tokens(files) + pictures, exact=exact and not files)

    tray.sig_changed.connect(show_pending)
    drop.picture_counts = PictureCounts(window.engine_process, tray, show_pending, window.session.picture_blocker, drop)
    return drop
