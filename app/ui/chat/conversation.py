"""The conversation controller: sends requests to the engine process, streams replies into the transcript and
stores them.

Every request gets a fresh id; Stop, Regenerate and switching chats retire the current id, so events still queued
for it are dropped. Tokens are buffered and written to the transcript every ~60 ms. A streaming reply is saved
while it streams (at least every second or every 64 tokens), marked "interrupted" until it ends, so a killed app
loses at most a second of it. Saves run on the reply saver's thread (reply_saver.py); stop() waits for them, so
whatever follows it reads the chat as stored. What the transcript shows of a reply, and the notices about it, are
reply_display.py's. GUI thread only.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Optional

from PySide6.QtCore import QObject, QTimer, Signal

from app.engine.events import (
    ContextEvent,
    FinishedEvent,
    GenerationStats,
    NoticeEvent,
    RoundEvent,
    ThreadsEvent,
    TokenEvent,
)
from app.engine.host.wire import ReplyEnded, ReplyFailed
from app.replies.status_words import round_words, sentence, threads_words
from app.store import ChatSettings, ChatStore, Message
from app.store.attachments import Attachment, Picture
from app.store.projects.sources import Source
from app.ui.transcript.chat_pages import ChatPages
from app.ui.transcript.chat_view import ChatView
from app.ui.transcript.format import transcript_message
from app.ui.engine_link.engine_process import EngineProcess
from app.ui.chat.chat_prompt import answers_pictures, chat_session, prompt_messages
from app.ui.chat.reply_display import ReplyDisplay
from app.ui.chat.reply_request import ReplyRequest, ReplyRequestSpec
from app.ui.chat.reply_saver import ReplySaver, save_failure_text

# Every write to the transcript repaints it, and on a small CPU the window's time is taken from llama.cpp's
# threads: 60 ms still reads as a smooth stream (docs/performance.md has the measurement).
FLUSH_INTERVAL_MS = 60
READOUT_INTERVAL_S = 0.25


class Conversation(QObject):
    """Drives one chat's generation. GUI thread only."""

    sig_busy_changed = Signal(bool)
    """A reply started (True) or ended (False)."""
    sig_live_stats = Signal(str)
    """The live readout while a reply streams ("" when none streams)."""
    sig_status = Signal(object)
    """(StatusWords): what speculation is doing now, read from the latest round's record (or a change of threads,
    or a sentence of the window's); said when it changes."""
    sig_context_usage = Signal(int, int)
    """(tokens used, context size) after a request was fitted or a reply finished."""
    sig_messages_changed = Signal(int)
    """(chat_id): messages were added to or removed from this chat."""
    sig_reply_finished = Signal(int)
    """(message_id): a reply was stored (finished, stopped or cut short by an error)."""
    sig_error = Signal(str)
    """Something went wrong that the user should read."""
    sig_tool_calls = Signal(int, object)
    """(message_id, tuple of ToolCall): a stored reply that ran to its end called tools (app.ui.tools runs them)."""
    sig_stopping = Signal()
    """stop() was called: whatever follows the reply (its tool calls) ends too."""

    def __init__(self, store: ChatStore, engine_process: EngineProcess, view: ChatView, parent=None):
        super().__init__(parent)
        self.store = store
        self.engine_process = engine_process
        self.view = view
        self.saver = ReplySaver(store.path, self)
        self.pages = ChatPages(store, view)
        self.display = ReplyDisplay(view, self.pages)  # what the transcript shows of the replies
        self._chat_id: Optional[int] = None
        self._request: Optional[ReplyRequest] = None
        self.last_stats: Optional[GenerationStats] = None  # the last reply's, as the engine sent them (Settings)
        self._next_id = 0
        self._n_ctx = 0
        self._context_used = 0
        self._last_status = ""
        self._speculative = True  # the request's: a chat with speculation off says so, whatever its rounds' kinds
        # The tools a chat offers the model (app.ui.tools.tool_turns), and what the last reply was asked with, so the
        # tool loop can ask for the next one the same way.
        self.tool_offer: Optional[Callable[[Optional[int]], str]] = None
        self.last_reply_spec: Optional[ReplyRequestSpec] = None
        self._tool_calls: dict[int, tuple] = {}  # request id -> the calls its finished reply made
        self._flush_timer = QTimer(self)
        self._flush_timer.setInterval(FLUSH_INTERVAL_MS)
        self._flush_timer.timeout.connect(self._flush)
        engine_process.sig_context.connect(self._on_context)
        engine_process.sig_notice.connect(self._on_notice)
        engine_process.sig_stream.connect(self._on_stream)
        engine_process.sig_engine_event.connect(self._on_engine_event)
        engine_process.sig_finished.connect(self._on_finished)
        engine_process.sig_generation_failed.connect(self._on_failed)
        engine_process.sig_generation_ended.connect(self._on_ended)

    # ----- state

    @property
    def chat_id(self) -> Optional[int]:
        """The chat shown (None: a new chat, stored when its first message is sent)."""
        return self._chat_id

    def is_busy(self) -> bool:
        return self._request is not None

    def active_request_id(self) -> Optional[int]:
        return self._request.request_id if self._request else None

    def _new_request_id(self) -> int:
        self._next_id += 1
        return self._next_id

    def reserve_request_id(self) -> int:
        """A fresh id in this chat's request sequence (Stop cancels every id up to its own), for a request whose
        events the transcript does not stream: Compare with plain."""
        return self._new_request_id()

    # ----- chats

    def open_chat(self, chat_id: Optional[int]) -> None:
        """Show a chat (None: an empty new chat). A reply streaming elsewhere is stopped and kept."""
        self.stop()
        self._chat_id = chat_id
        self.reload()
        last = self.store.messages(chat_id, limit=1) if chat_id is not None else []
        self.display.chat_opened(unanswered=bool(last) and last[0].role == "user")

    def reload(self, without: Optional[int] = None) -> None:
        """Show the open chat from its end (ChatPages); `without`: one message left out."""
        messages = self.pages.show(self.chat_id, without)
        stats = next((m.stats for m in reversed(messages) if m.role == "assistant" and m.stats), None)
        self._show_usage(stats.prompt_tokens + stats.tokens if stats else 0)

    def set_context_size(self, n_ctx: int) -> None:
        """The loaded model's context size (the gauge's full scale)."""
        self._n_ctx = n_ctx
        self._show_usage(self._context_used)

    def _show_usage(self, used: int) -> None:
        self._context_used = used
        self.sig_context_usage.emit(used, self._n_ctx)

    def prompt_messages(
        self,
        system_prompt: str,
        until_id: Optional[int] = None,
        before_id: Optional[int] = None,
        sees_pictures: bool = True,
    ) -> list[dict]:
        """The open chat as the engine reads it (chat_prompt.prompt_messages)."""
        return prompt_messages(self.store, self.chat_id, system_prompt, until_id, before_id, sees_pictures)

    def answers_pictures(self, reply_id: Optional[int] = None) -> bool:
        """Whether the reply `reply_id` (None: the next one) answers a message with pictures."""
        return answers_pictures(self.store, self.chat_id, reply_id)

    # ----- generation

    def send(
        self,
        text: str,
        spec: ReplyRequestSpec,
        new_chat_settings: ChatSettings,
        replace_from: Optional[int] = None,
        attachments: tuple[Attachment, ...] = (),
        pictures: tuple[Picture, ...] = (),
        sources: tuple[Source, ...] = (),
    ) -> int:
        """One whole turn: store the user's message (with its attached files, and the documents' `sources` it is
        sent with) and ask for a reply; returns the request id.

        A new chat is created first (with `new_chat_settings`); `replace_from` (an edited message) is kept, with
        everything after it, as a version of its own (app.store.branches), and the new message takes its place. Raises StoreError when the message could not be stored; nothing is sent then.
        """
        self.stop()
        first_message = self._chat_id is None
        chat_id = self._chat_id
        if chat_id is None:
            chat_id = self._chat_id = self.store.create_chat(settings=new_chat_settings).id
        if replace_from is not None:
            self.store.branch_from(chat_id, replace_from)
        message = self.store.add_message(
            chat_id, "user", text, attachments=attachments, pictures=pictures, sources=sources
        )
        if first_message or replace_from is not None:
            self.reload()
        else:
            self.view.add_message(transcript_message(message))  # append; no re-render of the chat
            self.view.scroll_to_end()
        self.sig_messages_changed.emit(self._chat_id)
        return self.start_reply(spec)

    def start_reply(self, spec: ReplyRequestSpec) -> int:
        """Ask for a reply to the chat as stored; returns the request id."""
        if self.chat_id is None:
            raise RuntimeError("no chat is open")
        self.stop()
        self.last_reply_spec = spec
        request = ReplyRequest(self._new_request_id(), self.chat_id, spec.target_name, spec.draft_name)
        return self._send(request, spec, self.prompt_messages(spec.system_prompt, sees_pictures=spec.sees_pictures))

    def continue_reply(self, spec: ReplyRequestSpec, message_id: int) -> Optional[int]:
        """Carry on writing the unfinished reply `message_id` (the chat's last message) where it ended."""
        if self.chat_id is None:
            return None
        self.stop()
        message = self.store.get_message(message_id)
        if message is None or message.role != "assistant" or message.chat_id != self.chat_id:
            return None
        # The engine reads a chat that ends with an assistant message as "continue this reply".
        messages = self.prompt_messages(spec.system_prompt, until_id=message_id, sees_pictures=spec.sees_pictures)
        request = ReplyRequest.continuing(self._new_request_id(), message, spec.target_name, spec.draft_name)
        request.saved_tokens = 0
        self.reload(without=message_id)  # the reply about to be continued is streamed anew
        return self._send(request, spec, messages)

    def _send(self, request: ReplyRequest, spec: ReplyRequestSpec, messages: list[dict]) -> int:
        self._request = request
        request.sampling = (spec.config.temperature, spec.config.seed)
        self._last_status = ""
        self._speculative = spec.config.speculative
        # The speculation controller learns acceptance per chat.
        config = dataclasses.replace(spec.config, session=chat_session(self.chat_id))
        if self.tool_offer is not None and not config.tools:
            config = dataclasses.replace(config, tools=self.tool_offer(self.chat_id))
        request.offers_tools = bool(config.tools)
        request.with_model = spec.draft_name is not None and config.drafter in ("auto", "model")
        self.engine_process.request_generate(request.request_id, messages, config)
        self._flush_timer.start()
        self.sig_busy_changed.emit(True)
        self.sig_live_stats.emit("Reading the prompt…")
        return request.request_id

    def stop(self, wait_for_save: bool = True) -> None:
        """Stop the streaming reply now: the part already shown is kept and stored; later tokens are dropped.
        `wait_for_save`: also wait until every reply is stored (what comes next reads or changes the chat); the
        Stop button does not need to."""
        self.sig_stopping.emit()
        request = self._request
        if request is not None:
            self.engine_process.cancel(request.request_id)
            self._end_request(request, request.partial_stats("cancelled"), text=None)
        if wait_for_save:
            self.saver.drain()

    def stop_reply(self) -> None:
        """The Stop button: the reply is stored meanwhile, on the saver's thread."""
        self.stop(wait_for_save=False)

    def close(self) -> None:
        """Stop the reply, store every reply still being saved, and end the saver's thread."""
        self.stop()
        self.saver.close()

    def regenerate(self, spec: ReplyRequestSpec, message_id: Optional[int] = None) -> Optional[int]:
        """A new version of the reply `message_id` (default: the last reply); the one it replaces is kept as a
        version of its own. The caller gives it a fresh seed (app.ui.shell.versions.regenerate_config)."""
        if self.chat_id is None:
            return None
        self.stop()
        # Ids and roles are all this needs: a long chat's provenance is not read for them.
        messages = self.store.message_texts(self.chat_id)
        if message_id is None:
            last_id, last_role = messages[-1][:2] if messages else (None, None)
            message_id = last_id if last_role == "assistant" else None
        if message_id is not None:
            self.store.branch_from(self.chat_id, message_id)
            self.sig_messages_changed.emit(self.chat_id)
        self.reload()  # also clears an error notice left by the attempt being retried
        if not any(role == "user" for _, role, _ in self.store.message_texts(self.chat_id)):
            return None
        return self.start_reply(spec)

    # ----- events from the engine process

    def _current(self, request_id: int) -> Optional[ReplyRequest]:
        request = self._request
        return request if request is not None and request.request_id == request_id else None

    def _on_context(self, context: ContextEvent) -> None:
        request = self._current(context.request_id)
        if request is None:
            return
        self._n_ctx = context.n_ctx
        request.prompt_tokens = max(0, context.prompt_tokens)
        if context.dropped:
            self.sig_status.emit(
                sentence(f"The oldest {context.dropped} messages are left out of the prompt to fit the context.")
            )
        self.display.left_out(context.dropped, context.n_ctx)
        if context.prompt_tokens >= 0:
            self._show_usage(context.prompt_tokens)
        self.display.begin(request)

    def _on_notice(self, notice: NoticeEvent) -> None:
        if self._current(notice.request_id) is not None:
            self.display.notice(notice.text)

    def _on_stream(self, events: list[TokenEvent | RoundEvent]) -> None:
        """A run of the engine's token and round records, in the order it wrote them (each round before its
        tokens): kept by the current request as records; a stopped or superseded request's are dropped."""
        request = self._request
        if request is None:
            return
        first = not request.has_tokens()
        for event in events:
            if event.request_id != request.request_id:
                continue
            match event:
                case TokenEvent():
                    request.add_token(event)
                case RoundEvent():
                    request.add_round(event)
                    words = round_words(event, self._speculative, request.drafters())
                    if words.line != self._last_status:  # said once: a change of threads said since stays
                        self._last_status = words.line
                        self.sig_status.emit(words)
        if first and request.has_tokens() and request.streaming:
            # The reply's first words show at once; the rest keeps the timer's pace.
            self.display.show_pending(request)

    def _on_engine_event(self, event: object) -> None:
        """Engine records without a signal of their own: a change of CPU threads goes to the status line."""
        if isinstance(event, ThreadsEvent) and self._current(event.request_id) is not None:
            self.sig_status.emit(threads_words(event))

    def _flush(self) -> None:
        request = self._request
        if request is None or not (request.pending or request.pending_reasoning) or not request.streaming:
            return
        self.display.show_pending(request)
        self.saver.save_if_due(request, self._save_failed)
        # The readout and the context gauge change slowly; repainting them on every flush costs decode speed.
        now = time.monotonic()
        if now - request.readout_at >= READOUT_INTERVAL_S:
            request.readout_at = now
            self.sig_live_stats.emit(request.live_readout())
            if self._n_ctx:
                self._show_usage(request.prompt_tokens + len(request.tokens))

    def _save_failed(self, exc: BaseException) -> None:
        self.sig_error.emit(save_failure_text(exc))

    def _on_finished(self, event: FinishedEvent) -> None:
        request = self._current(event.request_id)
        if request is None:
            return
        if event.tool_calls and event.stats.stop_reason == "eos":
            self._tool_calls[request.request_id] = event.tool_calls
        self._end_request(request, event.stats, text=event.text)

    def _on_failed(self, failed: ReplyFailed) -> None:
        request = self._current(failed.request_id)
        if request is None:
            return
        self._end_request(
            request, request.partial_stats("error"), text=None, error=failed.message, retryable=failed.retryable
        )

    def _on_ended(self, ended: ReplyEnded) -> None:
        request = self._current(ended.request_id)
        if request is not None:
            # The engine stopped without a result or an error; keep what arrived.
            self._end_request(request, request.partial_stats("cancelled"), text=None)

    def _end_request(
        self,
        request: ReplyRequest,
        stats: GenerationStats,
        text: Optional[str],
        error: Optional[str] = None,
        retryable: bool = True,
    ) -> None:
        """Retire the request and keep its reply (if any text arrived): the saver stores it, then the transcript
        shows it finished. Whatever goes wrong on the way, the window ends up idle: the busy state is reset in
        `finally`."""
        self._request = None
        stats = dataclasses.replace(stats, temperature=request.sampling[0], seed=request.sampling[1])
        self.last_stats = stats
        self._flush_timer.stop()
        try:
            if request.streaming:
                self.display.show_pending(request)
            request.pending = []
            if request.continued:
                stats = request.with_earlier_part(stats)
            if stats.thinking_unclosed:
                request.answer_from_thinking()
                text = None  # this run's and any earlier thinking, all of it the answer now
            reply = request.reply_text() if text is None else request.continued_text() + text
            # A reply that ended while thinking has no answer yet, and is kept for its thinking all the same; one
            # that only called tools is kept for its calls.
            if reply or request.reasoning or request.request_id in self._tool_calls:

                def failed(exc: BaseException) -> None:
                    self._save_failed(exc)
                    self._reply_kept(request, stats, reply, error, None, retryable)

                self.saver.save(
                    request.save_job(
                        stats,
                        reply,
                        final=True,
                        on_done=lambda stored, _seconds: self._reply_kept(
                            request, stats, reply, error, stored, retryable
                        ),
                        on_failed=failed,
                    )
                )
            else:
                self._reply_kept(request, stats, reply, error, None, retryable)
        finally:
            self.sig_live_stats.emit("")
            self.sig_busy_changed.emit(False)

    def _reply_kept(
        self,
        request: ReplyRequest,
        stats: GenerationStats,
        reply: str,
        error: Optional[str],
        stored: Optional[Message],
        retryable: bool = True,
    ) -> None:
        """The reply's save answered (`stored`: None when it failed or there was nothing to save)."""
        if request.chat_id == self.chat_id:
            self.display.finish(request, stats, reply, stored, error, retryable)
            if stats.prompt_tokens or request.prompt_tokens:
                self._show_usage((stats.prompt_tokens or request.prompt_tokens) + stats.tokens)
        elif error:
            self.sig_error.emit(error)
        calls = self._tool_calls.pop(request.request_id, ())
        if stored is not None:
            self.sig_messages_changed.emit(request.chat_id)
            self.sig_reply_finished.emit(stored.id)
            if calls and request.chat_id == self.chat_id:
                self.sig_tool_calls.emit(stored.id, calls)

    def refresh_reply(self, message_id: int) -> None:
        """Draw a shown reply again from the store (its tool calls changed)."""
        self.pages.refresh(message_id)
