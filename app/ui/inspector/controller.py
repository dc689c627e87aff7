"""Opens the per-reply inspector when the user clicks a reply's stats row. GUI thread only.

The inspector (and pyqtgraph with it) is imported on the first click, so the window starts without them.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from app.replies.comparison import PlainComparison
from app.store import ChatStore, StoreError
from app.ui.transcript.format import transcript_message


class InspectorController(QObject):
    """Shows a stored reply in the one inspector window, made on first use. GUI thread only."""

    sig_error = Signal(str)
    """The reply could not be read from the chat database: this says why, in one sentence."""

    def __init__(self, store: ChatStore, window: QWidget):
        super().__init__(window)
        self._store = store
        self._window = window
        self.dialog = None  # ReplyInspector, once opened

    def open_message(self, message_id: int) -> None:
        """Show the reply with this id (one that is gone, or is not a reply, opens nothing)."""
        try:
            message = self._store.get_message(message_id)
        except StoreError as exc:
            self.sig_error.emit(f"The reply could not be read for the inspector: {exc}")
            return
        if message is None or message.role != "assistant":
            return
        dialog = self._dialog()
        # A reply with no plain round to time one token by: Compare with plain measured it, when the user ran one.
        compared = PlainComparison.from_dict(message.comparison)
        fallback = 1.0 / compared.plain_tokens_per_second if compared and compared.plain_tokens_per_second > 0 else None
        try:
            sources = self._store.projects.sources_of(message.chat_id).get(message.id, ())
        except StoreError:
            sources = ()  # the reply is shown without them
        dialog.show_message(transcript_message(message, sources=sources), fallback)
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()

    def shown_message_id(self) -> Optional[int]:
        return self.dialog.message_id if self.dialog is not None and self.dialog.isVisible() else None

    def _dialog(self):
        if self.dialog is None:
            from app.ui.inspector.window import ReplyInspector

            self.dialog = ReplyInspector(self._window)
        return self.dialog


def attach(window) -> InspectorController:
    """Give `window` (MainWindow) its inspector: a reply's stats row, clicked, opens it for that reply."""
    controller = InspectorController(window.store, window)
    window.chat_view.sig_inspect.connect(controller.open_message)
    controller.sig_error.connect(window.show_error)
    return controller
