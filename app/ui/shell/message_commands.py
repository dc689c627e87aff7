"""What the links under a message do in the main window: Regenerate, Continue, Edit and Copy. GUI thread only.

A mixin of MainWindow (it uses the window's conversation, composer, store and confirm), kept apart so the window's
module stays a layout and its wiring.
"""

from __future__ import annotations

from typing import Optional

from PySide6.QtWidgets import QApplication

from app.store import StoreError
from app.ui.shell.versions import regenerate_config


class MessageCommands:
    """Regenerate, Continue, Edit and Copy of one message. Regenerate and Edit delete nothing: the version they
    replace, with what followed it, is kept and shown again by the switcher (app.ui.chat.versions)."""

    def regenerate(self, message_id: Optional[int]) -> None:
        message_id = message_id if message_id is None or message_id >= 0 else None  # an unsaved reply: the last
        args = self._request_args()
        if args is None:
            return
        if message_id is not None:  # a new version, not a Retry after an error: it may differ from the one before
            args = (regenerate_config(args[0]), *args[1:])
        try:
            self.conversation.regenerate(*args, message_id)
        except StoreError as exc:
            self.show_error(str(exc))

    def continue_reply(self, message_id: int) -> None:
        """Carry on writing an unfinished reply (stopped, interrupted or cut short)."""
        args = self._request_args()
        if args is not None:
            self.conversation.continue_reply(*args, message_id)

    def edit_message(self, message_id: int) -> None:
        """Put a sent message back into the composer; sending makes a new version of it (the old one is kept)."""
        message = self.store.get_message(message_id)
        if message is None or message.role != "user" or message.chat_id != self.conversation.chat_id:
            return
        self.conversation.stop()
        self._edit_message_id = message_id
        self.composer.set_text(message.content)
        self.composer.set_attachments(message.attachments)
        self.composer.set_editing(True)

    def _cancel_edit(self) -> None:
        if self._edit_message_id is not None:
            self._edit_message_id = None
            self.composer.set_editing(False)

    def _copy_message(self, message_id: int) -> None:
        message = self.store.get_message(message_id) if message_id >= 0 else None
        text = message.content if message is not None else self.conversation.unsaved_replies.get(message_id)
        if text is not None:
            QApplication.clipboard().setText(text)
