"""What the transcript shows of the replies of the open chat: a reply's start (a continued reply's earlier part and
thinking first), its thinking and tokens as each flush hands them over, and its end: the stored message, or, when
the store refused it, the reply under a key of its own that its Copy link still finds. The notices about replies
are said here too, each once: messages left out of the prompt, the engine's notices, a question left unanswered.
GUI thread only.
"""

from __future__ import annotations

from typing import Optional

from app.engine.events import GenerationStats
from app.store import Message
from app.ui.chat.reply_request import ReplyRequest
from app.ui.transcript.chat_pages import ChatPages
from app.ui.transcript.chat_view import ChatView
from app.ui.transcript.format import STREAM_KEY, TranscriptMessage, model_label


class ReplyDisplay:
    """The transcript's side of one chat's replies, for the conversation that drives them. GUI thread only."""

    def __init__(self, view: ChatView, pages: ChatPages):
        self.view = view
        self.pages = pages
        # Replies the store refused, by the key they are shown under (below STREAM_KEY), for their Copy link.
        self.unsaved_replies: dict[int, str] = {}
        self._unsaved_key = STREAM_KEY
        self._dropped_before = 0  # messages left out of the previous request's prompt, in this chat
        self._notice_shown = ""

    def chat_opened(self, unanswered: bool) -> None:
        """Another chat is shown (`unanswered`: its last message is the person's, with no reply after it)."""
        self.unsaved_replies.clear()
        self._dropped_before = 0
        self._notice_shown = ""
        if unanswered:
            # A reply that failed, or a window or engine killed mid-reply: the question keeps its way forward.
            self.view.add_notice(
                "This message has no reply: the last attempt failed or was interrupted.", kind="error", retry=True
            )

    def left_out(self, dropped: int, n_ctx: int) -> None:
        """The request's prompt leaves out the chat's oldest `dropped` messages to fit `n_ctx` tokens. Said when
        more are left out than for the previous reply: once a long chat overflows, every reply would otherwise
        repeat the same notice."""
        if dropped > self._dropped_before:
            noun = "message" if dropped == 1 else "messages"
            self.view.add_notice(
                f"The conversation is longer than the context ({n_ctx:,} tokens): the oldest {dropped} {noun} "
                "were left out of the prompt for this reply. They are still here and saved."
            )
        self._dropped_before = dropped

    def notice(self, text: str) -> None:
        """An engine's notice, said once per chat: a template that cannot be used fails the same way every reply."""
        if text != self._notice_shown:
            self._notice_shown = text
            self.view.add_notice(text)

    def begin(self, request: ReplyRequest) -> None:
        """The reply starts streaming (its prompt was read); a continued reply shows what it had so far."""
        self.view.begin_stream(model_label(request.target_name, request.draft_name))
        if request.reasoning:  # a continued reply's thinking so far
            self.view.append_reasoning(request.reasoning, request.rounds)
            if request.continued:
                self.view.answer_started(0.0, len(request.reasoning))
                request.answer_shown = True
        self.view.append_tokens(request.continued, request.rounds)
        request.streaming = True

    def show_pending(self, request: ReplyRequest) -> None:
        """Write the thinking and tokens that arrived since the last flush."""
        thinking = request.take_pending_reasoning()
        if thinking:
            self.view.append_reasoning(thinking, request.rounds)
        tokens = request.take_pending()
        if tokens:
            if request.reasoning and not request.answer_shown:
                self.view.answer_started(request.thinking_seconds(), len(request.reasoning))
            request.answer_shown = True
            self.view.append_tokens(tokens, request.rounds)

    def finish(
        self,
        request: ReplyRequest,
        stats: GenerationStats,
        reply: str,
        stored: Optional[Message],
        error: Optional[str],
        retryable: bool,
    ) -> None:
        """The reply ended and its save answered (`stored`: None when it failed or there was nothing to save);
        `error`: what cut it short, said below it."""
        label = model_label(request.target_name, request.draft_name)
        if stored is not None:
            self.view.finish_stream(self.pages.shown([stored])[0])
        elif reply or request.reasoning:
            # Not saved: shown under a key of its own, so its Copy link still finds the text.
            self._unsaved_key -= 1
            self.unsaved_replies[self._unsaved_key] = reply
            self.view.finish_stream(
                TranscriptMessage(
                    self._unsaved_key,
                    "assistant",
                    reply,
                    request.reply_tokens(),
                    stats,
                    label,
                    rounds=request.rounds,
                    reasoning=request.reasoning_text(),
                    reasoning_tokens=request.reasoning,
                )
            )
        elif request.streaming:
            self.view.finish_stream(TranscriptMessage(-1, "assistant", "", [], stats, label))
        if error:
            self.view.add_notice(error, kind="error", retry=retryable)
