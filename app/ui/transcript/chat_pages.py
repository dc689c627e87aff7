"""Which messages of the open chat the transcript shows: the newest page at once, older pages as the reader scrolls
up, each message with its versions. Opening a long chat costs one page, not all of it. GUI thread only."""

from __future__ import annotations

from typing import Optional

from app.store import ChatStore, Message
from app.ui.transcript.chat_view import ChatView
from app.ui.transcript.format import TranscriptMessage, transcript_message

# A chat is shown from its end, this many messages at a time.
PAGE_MESSAGES = 40


class ChatPages:
    """The pages of one chat at a time that `view` shows, read from `store`."""

    def __init__(self, store: ChatStore, view: ChatView):
        self.store = store
        self.view = view
        self._chat_id: Optional[int] = None
        self._oldest_shown: Optional[int] = None  # the first message the transcript shows
        view.sig_older_wanted.connect(self._show_older)

    def show(self, chat_id: Optional[int], without: Optional[int] = None) -> list[Message]:
        """Show chat `chat_id` (None: an empty new chat) from its end, `without` one message; returns the
        messages shown."""
        self._chat_id = chat_id
        messages = self.store.messages(chat_id, limit=PAGE_MESSAGES + 1) if chat_id is not None else []
        has_older = len(messages) > PAGE_MESSAGES
        messages = [m for m in messages[-PAGE_MESSAGES:] if m.id != without]
        self._oldest_shown = messages[0].id if messages else None
        self.view.show_messages(self.shown(messages), has_older=has_older)
        return messages

    def _show_older(self) -> None:
        if self._chat_id is None or self._oldest_shown is None:
            return
        older = self.store.messages(self._chat_id, before_id=self._oldest_shown, limit=PAGE_MESSAGES + 1)
        has_older = len(older) > PAGE_MESSAGES
        older = older[-PAGE_MESSAGES:]
        if older:
            self._oldest_shown = older[0].id
            self.view.prepend_messages(self.shown(older), has_older)

    def shown(self, messages: list[Message]) -> list[TranscriptMessage]:
        """The messages as the transcript shows them, with the versions of those regenerated or edited."""
        chat_id = self._chat_id
        versions = self.store.versions(chat_id) if chat_id is not None and messages else {}
        sources = self.store.projects.sources_of(chat_id) if chat_id is not None and messages else {}
        return [
            transcript_message(
                m, (versions[m.id].index, versions[m.id].count) if m.id in versions else None, sources.get(m.id, ())
            )
            for m in messages
        ]

    def refresh(self, message_id: int) -> None:
        """Draw a shown message again from the store (its tool calls changed)."""
        message = self.store.get_message(message_id)
        if message is not None and message.chat_id == self._chat_id:
            self.view.refresh_message(self.shown([message])[0])
