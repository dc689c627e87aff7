"""Compare with plain: a finished reply's request run again in the background without speculation.

The plain run is an ordinary generate request to the engine process, stamped from the conversation's request
sequence, whose events the transcript does not stream; the reply shows "Comparing with plain decoding…" until it
ends, then both speeds, their ratio and whether the texts agree (app.replies.comparison), kept with the reply.

The engine runs one request at a time, so a comparison never makes a reply wait: sending, regenerating or
continuing cancels it (the reply says so), as do choosing another model or closing the window. It is refused
while a reply is being written, and when the reply's model is not the one loaded now. One comparison runs at a
time; starting another cancels the first. GUI thread only.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Callable, Optional, Union

from PySide6.QtCore import QObject, Signal

from app.replies.comparison import ShownComparison, compare_runs, failed_state, running_state
from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from app.engine.host.wire import ReplyEnded, ReplyFailed
from app.store import ChatStore, StoreError
from app.ui.transcript.chat_view import ChatView
from app.ui.chat.conversation import Conversation
from app.ui.chat.reply_request import ReplyRequestSpec
from app.ui.engine_link.engine_process import EngineProcess

CANCELLED_BY_REPLY = "Comparison cancelled: a new reply was asked for. Compare again when it is done."
CANCELLED_BY_MODEL = "Comparison cancelled: another model was chosen."
BUSY = "A reply is being written; compare when it has finished."
# How often the plain run's progress is shown under its reply (each showing draws the reply again).
PROGRESS_INTERVAL_S = 0.5


# What the plain run is asked with, as the window has it now (the chat's settings, with no draft: speculation is
# turned off here), or one sentence saying why no request can be sent now.
RequestSource = Callable[[], Union[ReplyRequestSpec, str]]


@dataclass
class _Run:
    request_id: int
    message_id: int
    reply_text: str
    speculative_tps: float
    temperature: float
    target_name: str
    reply_threads: list[int]  # the CPU threads of each of the reply's rounds
    plain_threads: list[int]  # and of the plain run's, as its rounds arrive
    max_tokens: int = 0  # what the plain run writes at most, for its progress
    # The reply ended where its model stopped: the plain run may stop elsewhere, so max_tokens is no total to show.
    stops_on_its_own: bool = False
    reply_tokens: int = 0  # the speculative reply's, shown beside the plain run's progress
    plain_tokens: int = 0  # written so far
    shown_at: float = 0.0  # when its progress was last shown (monotonic seconds)


class PlainCompare(QObject):
    """Runs Compare with plain for the open chat's replies. GUI thread only."""

    sig_result = Signal(int, object)
    """(message_id, the comparison dict kept with it): a comparison finished and was stored."""

    def __init__(
        self,
        store: ChatStore,
        engine_process: EngineProcess,
        conversation: Conversation,
        view: ChatView,
        request_source: RequestSource,
        parent=None,
    ):
        super().__init__(parent)
        self.store = store
        self.engine_process = engine_process
        self.conversation = conversation
        self.view = view
        self._request_source = request_source
        self._run: Optional[_Run] = None
        view.sig_compare.connect(self.toggle)
        conversation.sig_busy_changed.connect(self._on_busy)
        engine_process.sig_finished.connect(self._on_finished)
        engine_process.sig_stream.connect(self._on_stream)
        engine_process.sig_generation_failed.connect(self._on_failed)
        engine_process.sig_generation_ended.connect(self._on_ended)

    def running_for(self) -> Optional[int]:
        """The reply being compared now (None when no comparison runs)."""
        return self._run.message_id if self._run else None

    def toggle(self, message_id: int) -> None:
        """The reply's link: cancel its running comparison, or start one."""
        if self._run is not None and self._run.message_id == message_id:
            self.cancel()
        else:
            self.start(message_id)

    def start(self, message_id: int) -> None:
        """Run the reply's request again without speculation; the reply shows how it goes."""
        self.cancel()
        message = self.store.get_message(message_id)
        if (
            message is None
            or message.role != "assistant"
            or not message.stats
            or message.chat_id != self.conversation.chat_id
        ):
            return
        if self.conversation.is_busy():
            self._show(message_id, failed_state(BUSY))
            return
        request = self._request_source()
        if isinstance(request, str):
            self._show(message_id, failed_state(request))
            return
        if message.target_name and message.target_name != request.target_name:
            self._show(
                message_id,
                failed_state(
                    f"This reply was written by {message.target_name} and {request.target_name} is loaded now; "
                    f"choose {message.target_name} again to compare."
                ),
            )
            return
        prompt = self.conversation.prompt_messages(
            request.system_prompt, before_id=message_id, sees_pictures=request.sees_pictures
        )
        if not any(m["role"] != "system" for m in prompt):
            return
        stats = message.stats
        # A reply that ended early is timed over the tokens it has; the plain run writes as many.
        max_tokens = request.config.max_tokens if stats.stop_reason == "eos" else stats.tokens
        # Sampled as the reply was (a regenerated reply of a greedy chat is sampled at 0.7 with its own seed), where
        # the reply kept how; the texts of two sampled runs may still differ, and the result says so.
        asked = request.config
        if stats.temperature is not None:
            asked = dataclasses.replace(asked, temperature=stats.temperature, seed=stats.seed)
        config = dataclasses.replace(
            asked,
            speculative=False,
            max_tokens=max(1, int(max_tokens or 1)),
            # Its own session: plain rounds must not teach the chat's speculation controller. The same reply again
            # adds nothing to history.
            session=f"chat-{message.chat_id}-plain",
            history=False,
        )
        request_id = self.conversation.reserve_request_id()
        self._run = _Run(
            request_id,
            message_id,
            message.content,
            stats.tokens_per_second,
            config.temperature,
            request.target_name,
            [r.threads for r in message.rounds or []],
            [],
            config.max_tokens,
            stops_on_its_own=stats.stop_reason == "eos",
            reply_tokens=stats.tokens,
        )
        self.engine_process.request_generate(request_id, prompt, config)
        self._show(message_id, running_state())

    def cancel(self, reason: str = "") -> None:
        """Stop the running comparison; `reason` is shown under its reply ("" shows the link again)."""
        run, self._run = self._run, None
        if run is None:
            return
        self.engine_process.cancel(run.request_id)
        self._show(run.message_id, failed_state(reason) if reason else None)

    # ----- the engine's answers

    def _on_busy(self, busy: bool) -> None:
        if busy:
            self.cancel(CANCELLED_BY_REPLY)

    def _on_stream(self, events: list) -> None:
        run = self._run
        if run is not None:
            run.plain_threads += [
                e.threads for e in events if isinstance(e, RoundEvent) and e.request_id == run.request_id
            ]
            run.plain_tokens += sum(1 for e in events if isinstance(e, TokenEvent) and e.request_id == run.request_id)
            now = time.monotonic()
            if run.plain_tokens and now - run.shown_at >= PROGRESS_INTERVAL_S:  # the reply is drawn again for it
                run.shown_at = now
                of = 0 if run.stops_on_its_own else run.max_tokens
                written = min(run.plain_tokens, run.max_tokens)
                self._show(run.message_id, running_state(written, of, run.reply_tokens))

    def _on_finished(self, event: FinishedEvent) -> None:
        run = self._run
        if run is None or event.request_id != run.request_id:
            return
        self._run = None
        comparison = compare_runs(
            run.reply_text,
            run.speculative_tps,
            event.text,
            event.stats.tokens_per_second,
            event.stats.tokens,
            run.temperature,
            run.target_name,
            run.reply_threads,
            run.plain_threads,
        ).to_dict()
        try:
            self.store.set_comparison(run.message_id, comparison)
        except StoreError as exc:
            self._show(run.message_id, failed_state(f"The comparison could not be saved: {exc}"))
            return
        self._show(run.message_id, None)
        self.sig_result.emit(run.message_id, comparison)

    def _on_failed(self, failed: ReplyFailed) -> None:
        run = self._run
        if run is not None and failed.request_id == run.request_id:
            self._run = None
            self._show(run.message_id, failed_state(f"The plain run failed: {failed.message}"))

    def _on_ended(self, ended: ReplyEnded) -> None:
        run = self._run
        if run is not None and ended.request_id == run.request_id:
            # Ended without a result or an error: the engine was stopped under it.
            self._run = None
            self._show(run.message_id, None)

    def _show(self, message_id: int, state: Optional[ShownComparison]) -> None:
        """Show the reply with `state` (running, failed) over its stored result, or with what is stored (None)."""
        self.view.set_pending_comparison(message_id, state)
        message = self.store.get_message(message_id)
        if message is not None and message.chat_id == self.conversation.chat_id:
            self.conversation.refresh_reply(message_id)  # with its versions' switcher, as the chat shows it


def attach(window) -> PlainCompare:
    """Give `window` (MainWindow) Compare with plain on its replies."""

    def request_source() -> Union[ReplyRequestSpec, str]:
        problem = window.session.send_blocker(window.library_ctl.scanned_once())
        if problem:
            return problem
        if not window.models_ready():
            return "The model is still loading; compare when it is ready."
        settings = window.chat_settings.current()
        # As a reply is asked (the model's own defaults, a template-less model's prompt format), the draft aside.
        return ReplyRequestSpec(
            window.generation_config(),
            settings.system_prompt,
            window.session.names()[0],
            None,
            sees_pictures=not window.session.picture_blocker(),
        )

    compare = PlainCompare(
        window.store, window.engine_process, window.conversation, window.chat_view, request_source, window
    )
    for signal in (window.session.sig_target_chosen, window.session.sig_draft_chosen):
        signal.connect(lambda *_: compare.cancel(CANCELLED_BY_MODEL))
    return compare
