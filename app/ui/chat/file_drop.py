"""Files dropped anywhere on the window are attached to the next message; refusals and the context they will
take show at once (the error banner, the footer's gauge). GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject
from PySide6.QtGui import QDropEvent

from app.engine.image_files import PICTURE_TOKENS_ESTIMATE
from app.store.attachments import estimate_tokens
from app.ui.chat.attachment_tray import local_files


class FileDrop(QObject):
    """An event filter on the window: a drag of local files is accepted, and the drop attaches them."""

    def __init__(self, window):
        super().__init__(window)
        self._window = window

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
    tray.sig_changed.connect(
        lambda: window.footer.show_pending_tokens(
            estimate_tokens(tray.attachments()) + PICTURE_TOKENS_ESTIMATE * len(tray.pictures())
        )
    )
    return drop
