"""What the links under a message do: Regenerate, Continue, Edit and Copy. GUI thread only.

The window owns one MessageCommands and wires the transcript's links and the composer's Cancel to it; it is given
its collaborators (the conversation, the composer, the store, how to build a request, how to show an error), never
the window itself.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional

from PySide6.QtWidgets import QApplication

from app.store import ChatStore, StoreError
from app.ui.chat.composer import Composer
from app.ui.chat.conversation import Conversation
from app.ui.chat.reply_request import ReplyRequestSpec
from app.ui.shell.versions import regenerate_config


class MessageCommands:
    """Regenerate, Continue, Edit and Copy of one message. Regenerate and Edit delete nothing: the version they
    replace, with what followed it, is kept and shown again by the switcher (app.ui.chat.versions)."""

    def __init__(
        self,
        conversation: Conversation,
        composer: Composer,
        store: ChatStore,
        reply_spec: Callable[[bool], Optional[ReplyRequestSpec]],
        show_error: Callable[[str], None],
    ):
        self._conversation = conversation
        self._composer = composer
        self._store = store
        self._reply_spec = reply_spec  # given whether the reply answers pictures; None: it said why not
        self._show_error = show_error
        self._editing: Optional[int] = None

    @property
    def editing(self) -> Optional[int]:
        """The id of the sent message being edited in the composer, or None."""
        return self._editing

    def regenerate(self, message_id: Optional[int]) -> None:
        message_id = message_id if message_id is None or message_id >= 0 else None  # an unsaved reply: the last
        # A model that cannot see answers no message with pictures: a sentence, and no new version is made.
        spec = self._reply_spec(self._conversation.answers_pictures(message_id))
        if spec is None:
            return
        if message_id is not None:  # a new version, not a Retry after an error: it may differ from the one before
            spec = dataclasses.replace(spec, config=regenerate_config(spec.config))
        try:
            self._conversation.regenerate(spec, message_id)
        except StoreError as exc:
            self._show_error(str(exc))

    def continue_reply(self, message_id: int) -> None:
        """Carry on writing an unfinished reply (stopped, interrupted or cut short)."""
        spec = self._reply_spec(self._conversation.answers_pictures(message_id))
        if spec is not None:
            self._conversation.continue_reply(spec, message_id)

    def edit_message(self, message_id: int) -> None:
        """Put a sent message back into the composer; sending makes a new version of it (the old one is kept)."""
        message = self._store.get_message(message_id)
        if message is None or message.role != "user" or message.chat_id != self._conversation.chat_id:
            return
        self._conversation.stop()
        self._editing = message_id
        self._composer.set_text(message.content)
        self._composer.set_attachments(message.attachments)
        self._composer.set_pictures(tuple(p.picture() for p in message.pictures if p.path.is_file()))
        self._composer.set_editing(True)

    def edit_sent(self) -> None:
        """The edited message went out as a new version; the composer clears itself."""
        self._editing = None

    def cancel_edit(self) -> None:
        if self._editing is not None:
            self._editing = None
            self._composer.set_editing(False)

    def copy_message(self, message_id: int) -> None:
        message = self._store.get_message(message_id) if message_id >= 0 else None
        text = message.content if message is not None else self._conversation.display.unsaved_replies.get(message_id)
        if text is not None:
            QApplication.clipboard().setText(text)
