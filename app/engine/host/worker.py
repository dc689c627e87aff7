"""The engine's own process: the loop that owns a SpecEngine and answers requests over a pipe.

llama.cpp stops its whole process with abort() on inputs it does not validate, so the window never loads a model
itself: it starts this loop in a child process (multiprocessing, "spawn") and supervises it. Everything that
crosses the pipe is a record of app.engine.host.wire, so this module knows nothing of Qt.

Requests are answered in order, one at a time, or side by side when the engine decodes several in one batch
(ChatEngine.parallel > 1: _WorkerLoop says how). A GenerateReply's replies are EngineEvents batches, then
ReplyFailed if it failed, then always ReplyEnded. Stop crosses as a shared integer (see app.engine.host.wire).

The local API's requests come as AnswerChat and AnswerCompletion (app.engine.host.api_answers answers them), from
`specchat-cli serve`'s client (app.serve.engine.client) and from the window's API (app.ui.engine_link.api_bridge),
whose HTTP side runs in the parent, so a crash here costs its clients one error each, never their connections.
Their Stop is a flag per request on a shared board of their own, `api_gone` (app.engine.host.stops: the window's
ids and the API's are counted apart, and API requests run side by side), and a second board, `api_enough`, says a
stop string came: the reply ends, its totals still come.
"""

from __future__ import annotations

import os
import threading
import time
import traceback
from pathlib import Path
from collections import deque
from typing import Callable, Iterable, Iterator, Optional

from app.engine.child_process import settle_child
from app.engine.config import LoadSettings
from app.engine.errors import EngineError
from app.engine.events import RoundEvent, TokenEvent, WaitingEvent
from app.engine.host.api_answers import abort_if_asked, answer_api
from app.engine.host.errands import run_errand
from app.engine.host.stops import NEVER, StopBoard, UpToFlag
from app.engine.host.wire import (
    AnswerChat,
    AnswerCompletion,
    CountPicture,
    EngineEvents,
    ForgetChat,
    GenerateReply,
    ListDevices,
    LoadFailed,
    LoadingModel,
    LoadModels,
    MeasureApiHistory,
    ModelsLoaded,
    Reply,
    ReplyEnded,
    ReplyFailed,
    ReplyStarted,
    Shutdown,
    WorkerReady,
)
from app.engine.protocol import CancelSignal, ChatEngine
from app.engine.tools.stream import with_tool_calls

STREAM_BATCH_S = 0.05
# Background work waits this long after the last request, so a reply and the next message typed soon after it
# never share the CPU with it: it counts from the end of the last request.
IDLE_AFTER_S = 1.0
# With several sequences, an idle engine waits this long after a request for others sent with it, so that they
# start in one step: requests sent together through HTTP reach the pipe a few milliseconds apart, and one that
# missed the first step waited a whole prompt pass to join (about a second for an F16 target on a CPU, on a
# burst of 10 s).
GATHER_S = 0.02


def default_engine_factory(load: LoadSettings) -> ChatEngine:
    """Local models for file targets, a server's for server targets (app.engine.host.engine_factory)."""
    from app.engine.host.engine_factory import DispatchingEngine

    return DispatchingEngine(load)


def run_worker(
    conn,
    log_path: Optional[str],
    cancelled_up_to,
    engine_factory: Optional[Callable] = None,
    api_gone: Optional[StopBoard] = None,
    api_enough: Optional[StopBoard] = None,
) -> None:
    """The worker process's main function (the supervisor's child entry: `conn` and `log_path` first)."""
    settle_child(log_path)  # dies with its parent at once when it is killed outright; the watch below covers others
    _exit_with_parent()
    host = _WorkerLoop(conn, cancelled_up_to, engine_factory or default_engine_factory, api_gone, api_enough)
    try:
        host.serve()
    finally:
        host.close()


def _exit_with_parent() -> None:
    """End this process when the window's process is gone (killed, crashed): nobody is left to read its replies,
    and a model load or a reply would otherwise run to its end holding the memory."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="parent watch", daemon=True).start()


class _Outbox:
    """One request's records on their way to the pipe. Token and round events cross in batches: one message per
    token costs the window's thread time that, on a small CPU, is taken from decoding (llama.cpp keeps every core
    busy). Any other record (the context, a notice, the finish, whatever the engine adds later) flushes the batch
    and goes at once, and so does the first token: how soon a reply starts is what a person waits for."""

    def __init__(self, send: Callable[[Reply], None]):
        self._send = send
        self._batch: list = []
        self._last_sent = time.monotonic()
        self._first = True

    def put(self, event: object) -> None:
        if isinstance(event, (ReplyStarted, ReplyFailed)):  # an API request's own records cross as they are
            self.flush()
            self._send(event)
            return
        self._batch.append(event)
        now = time.monotonic()
        if (
            not isinstance(event, (TokenEvent, RoundEvent))
            or now - self._last_sent >= STREAM_BATCH_S
            or (self._first and isinstance(event, TokenEvent))
        ):
            self._first = self._first and not isinstance(event, TokenEvent)
            self.flush()

    def flush(self) -> None:
        if self._batch:
            self._send(EngineEvents(tuple(self._batch)))
            self._batch = []
        self._last_sent = time.monotonic()


class _Answer:
    """A request being answered: its records, its Stop, and what it says when it fails."""

    def __init__(
        self, request_id: int, events: Iterable[object], cancel: CancelSignal, outbox: _Outbox, failure: str = ""
    ):
        self.request_id = request_id
        self.events: Iterator[object] = iter(events)
        self.cancel = cancel
        self.outbox = outbox
        self.failure = failure  # "" : its events never raise (an API answer's failures are records already)


class _WorkerLoop:
    """Runs in the worker process's main thread only.

    Requests are answered side by side when the engine decodes them so (ChatEngine.parallel > 1): between two of
    its steps the loop reads the pipe, so a request sent while others are answered joins at the next step, and
    each answer's records are sent as they come. Loading models and the errands wait until no answer runs."""

    def __init__(
        self,
        conn,
        cancelled_up_to,
        engine_factory: Callable,
        api_gone: Optional[StopBoard] = None,
        api_enough: Optional[StopBoard] = None,
    ):
        self._conn = conn
        self._api_enough = api_enough
        self._cancelled_up_to = cancelled_up_to
        self._engine_factory = engine_factory
        self._engine: Optional[ChatEngine] = None
        self._load: Optional[LoadSettings] = None
        self._api_gone = api_gone
        self._answers: list[_Answer] = []
        self._later: deque = deque()  # loads and errands that came while answers ran

    def _send(self, message: Reply) -> None:
        self._conn.send(message)

    def serve(self) -> None:
        self._send(WorkerReady())
        idle_work, idle_since = False, time.monotonic()
        while True:
            if self._answers:
                if not self._read_requests(block=False):
                    return
                self._advance()
                idle_work, idle_since = True, time.monotonic()
                continue
            if self._later:
                if not self._handle(self._later.popleft()):
                    return
                continue
            timeout = None
            if idle_work and self._engine is not None:
                # Background work (measuring forward-pass costs) runs a step at a time once nothing has happened
                # for IDLE_AFTER_S, and only while no request is waiting: a request waits for one step at most.
                timeout = max(0.0, idle_since + IDLE_AFTER_S - time.monotonic())
            try:
                ready = timeout is None or self._conn.poll(timeout)
            except (EOFError, OSError):
                return
            if not ready:
                idle_work = self._idle_step()
                continue
            if not self._read_requests(block=True):
                return
            if self._answers and _parallel(self._engine) > 1 and not self._gather():
                return
            if not self._answers:
                idle_work, idle_since = True, time.monotonic()

    def _gather(self) -> bool:
        """Read the requests that come within GATHER_S of each other (False when the loop is to end)."""
        try:
            while self._conn.poll(GATHER_S):
                if not self._read_requests(block=True):
                    return False
        except (EOFError, OSError):
            return False
        return True

    def _read_requests(self, block: bool) -> bool:
        """Take the requests the pipe holds (at least one when `block`); False when the loop is to end."""
        try:
            while block or self._conn.poll(0):
                block = False
                if not self._handle(self._conn.recv()):
                    return False
        except (EOFError, OSError):
            return False  # the window is gone
        return True

    def _handle(self, request: object) -> bool:
        match request:
            case Shutdown():
                return False
            case GenerateReply():
                self._start(self._generate(request))
            case AnswerChat() | AnswerCompletion():
                self._start(self._answer_api(request))
            case LoadModels() | ListDevices() | ForgetChat() | MeasureApiHistory() | CountPicture() if self._answers:
                self._later.append(request)  # they change or use the models the answers run on
            case LoadModels():
                abort_if_asked(request)
                self._load_models(request)
            case ListDevices() | ForgetChat() | MeasureApiHistory() | CountPicture():
                self._send(run_errand(request, self._engine))
        return True

    def _start(self, answer: Optional[_Answer]) -> None:
        if answer is None:
            return
        self._answers.append(answer)
        if _parallel(self._engine) <= 1:
            self._advance()  # one at a time: it runs to its end before the pipe is read again

    def _advance(self) -> None:
        """Read every answer's records until it waits for the next step (or ends), then step the engine once."""
        for answer in list(self._answers):
            if not self._pump(answer):
                self._answers.remove(answer)
        if self._answers and self._engine is not None:
            self._engine_step()

    def _engine_step(self) -> None:
        step = getattr(self._engine, "step", None)
        if step is not None:
            step()

    def _pump(self, answer: _Answer) -> bool:
        """Send `answer`'s records until it waits for a step (True) or has ended (False: ReplyEnded sent)."""
        try:
            for event in answer.events:
                if answer.cancel.is_set():
                    break  # stopped: nothing more, and no result, leaves this process
                if isinstance(event, WaitingEvent):
                    answer.outbox.flush()
                    return True
                answer.outbox.put(event)
        except EngineError as exc:
            answer.outbox.flush()  # what arrived is part of the reply the window keeps: it comes first
            if not answer.cancel.is_set():
                self._send(ReplyFailed(answer.request_id, str(exc)))
        except Exception as exc:
            traceback.print_exc()
            answer.outbox.flush()
            if not answer.cancel.is_set():
                self._send(ReplyFailed(answer.request_id, f"{answer.failure}: {exc}"))
        else:
            if not answer.cancel.is_set():
                answer.outbox.flush()
        close = getattr(answer.events, "close", None)
        if close is not None:
            close()  # a stopped reply's generator ends now: its sequence is freed at the next step
        self._send(ReplyEnded(answer.request_id))
        return False

    def _idle_step(self) -> bool:
        if self._engine is None:
            return False
        try:
            return self._engine.idle_step()
        except Exception:  # background work must never take the engine down; it is tried after the next request
            traceback.print_exc()
            return False

    def close(self) -> None:
        for answer in self._answers:
            close = getattr(answer.events, "close", None)
            if close is not None:
                close()
        self._answers = []
        if self._engine is not None:
            try:
                self._engine.close()
            finally:
                self._engine = None

    # ----- loading

    def _ensure_engine(self, load: LoadSettings) -> ChatEngine:
        if self._engine is None:
            self._engine = self._engine_factory(load)
        elif load != self._load:
            # Context size, threads or GPU layers changed: llama.cpp needs the models loaded again.
            self._engine.reconfigure(load)
        self._load = load
        return self._engine

    def _load_models(self, request: LoadModels) -> None:
        request_id, target, draft = request.request_id, request.target, request.draft
        try:
            engine = self._ensure_engine(request.settings)
            if target is None:
                engine.unload()
            else:
                if engine.loaded_target != target:
                    self._send(LoadingModel(request_id, str(target), "target"))
                    engine.load_target(target, planned_draft=draft)
                current = engine.draft_path
                if (current is None) != (draft is None) or (draft is not None and str(current) != str(draft)):
                    if draft is not None:
                        self._send(LoadingModel(request_id, str(draft), "draft"))
                    engine.load_draft(draft)
                load_projector = getattr(engine, "load_projector", None)  # a local engine's: it reads pictures
                offer_projector = getattr(engine, "offer_projector", None)
                if request.projector is not None:  # serve --mmproj: loaded now, so a file that does not fit says so
                    if load_projector is not None and request.projector != getattr(engine, "projector_path", None):
                        load_projector(request.projector)
                elif offer_projector is not None:  # never unloads one read at a picture: a draft change keeps it
                    offer_projector(request.chosen_projector)
        except EngineError as exc:
            self._send(LoadFailed(request_id, str(exc)))
            return
        except Exception as exc:  # never let the loop die on something unforeseen
            traceback.print_exc()
            self._send(LoadFailed(request_id, f"Loading failed: {exc}"))
            return
        self._send(
            ModelsLoaded(
                request_id,
                engine.loaded_target,
                Path(engine.draft_path) if engine.draft_path else None,
                engine.n_ctx,
                engine.placement_note,
                _parallel(engine),
                getattr(engine, "offered_projector", None),
            )
        )

    # ----- answers

    def _generate(self, request: GenerateReply) -> Optional[_Answer]:
        request_id = request.request_id
        cancel = UpToFlag(self._cancelled_up_to, request_id)
        if cancel.is_set():
            self._send(ReplyEnded(request_id))
            return None
        engine = self._engine
        if engine is None or engine.loaded_target is None:
            self._send(ReplyFailed(request_id, "No model is loaded. Choose a model above."))
            self._send(ReplyEnded(request_id))
            return None
        events: Iterable[object] = _deferred(
            lambda: engine.reply(list(request.messages), request.config, cancel=cancel, request_id=request_id)
        )
        if request.config.tools:  # the window runs the calls: they cross as records, not as text
            events = with_tool_calls(events, engine.tool_format, request.config.tools)
        return _Answer(request_id, events, cancel, _Outbox(self._send), failure="Generation failed")

    def _answer_api(self, request: AnswerChat | AnswerCompletion) -> _Answer:
        request_id = request.request_id
        # Flags of its own: the window's ids and the API's are counted apart, and API requests run side by side.
        gone = self._api_gone.flag(request_id) if self._api_gone is not None else NEVER
        enough = self._api_enough.flag(request_id) if self._api_enough is not None else NEVER
        abort_if_asked(request)
        return _Answer(request_id, answer_api(self._engine, request, gone, enough), gone, _Outbox(self._send))


def _deferred(make: Callable[[], Iterable[object]]) -> Iterator[object]:
    """`make()`'s events, made at the first one read: what it raises is the answer's failure, sent as such."""
    yield from make()


def _parallel(engine: Optional[ChatEngine]) -> int:
    """Requests the engine answers side by side (1 for an engine that answers one at a time)."""
    return int(getattr(engine, "parallel", 1)) if engine is not None else 1
