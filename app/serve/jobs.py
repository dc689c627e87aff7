"""Requests waiting for the engine, in order, and running one on the thread that owns the models.

The HTTP side (any thread) submits a ServeJob. `specchat-cli serve` takes jobs on its main thread and sends them to
its engine process (app.serve.engine.client), and the window sends them to its own (app.ui.engine_link.api_bridge);
both `relay` the answers to the job's `sink`. A thread that owns an engine itself (the tests, the benchmarks) runs
them one at a time with `run_job`, which hands every event to the sink. A job's outcome is a short sequence of records:
JobStarted or JobFailed, the engine's own events, and always JobEnded last.
"""

from __future__ import annotations

import os
import select
import sys
import threading
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from app.common.text import printable
from app.engine.events import FinishedEvent, NoticeEvent
from app.engine.host.api_answers import ApiAnswer, answer_api
from app.engine.host.wire import AnswerChat, AnswerCompletion, ModelsLoaded, ReplyFailed, ReplyStarted
from app.engine.protocol import ChatEngine
from app.engine.targets import ServerModel, Target
from app.engine.tools.calls import ToolFormat
from app.serve.completions.requests import ApiRequest, CompletionRequest

STOPPED = "The reply was stopped in the SpecChat window."  # what a client hears when the footer's Stop ended it


@dataclass(frozen=True)
class ServedModels:
    """What the server answers with now, as /v1/models lists it; read by the HTTP side, written by the engine's."""

    target: str = ""  # the model id clients name ("" when nothing is loaded)
    draft: str = ""  # the draft model's id, or "" (n-gram lookup or plain decoding)
    n_ctx: int = 0
    parallel: int = 1  # requests answered side by side
    # The target's GGUF file ("" for a server's model) and whether a projector reads its pictures: what Ollama's
    # /api/show and /api/tags describe the model by.
    path: str = ""
    projector: bool = False


def model_id(target: Target | Path | None) -> str:
    """The id a client names a model by: the GGUF file's name without .gguf, or a server model's own id."""
    if target is None:
        return ""
    if isinstance(target, ServerModel):
        return target.model
    return Path(target).name.removesuffix(".gguf")


def loaded_models(loaded: ModelsLoaded) -> ServedModels:
    """What an engine process that loaded models serves (its ModelsLoaded)."""
    return ServedModels(
        model_id(loaded.target),
        model_id(loaded.draft),
        loaded.n_ctx,
        loaded.parallel,
        target_file(loaded.target),
        loaded.projector is not None,
    )


def served_models(engine: Optional[ChatEngine]) -> ServedModels:
    """Call on the engine's thread."""
    if engine is None or engine.loaded_target is None:
        return ServedModels()
    target = engine.loaded_target
    return ServedModels(
        model_id(target), model_id(engine.draft_path), engine.n_ctx, engine.parallel, target_file(target)
    )


def target_file(target: Target | Path | None) -> str:
    """The GGUF file a target is loaded from; "" for a server's model."""
    return "" if target is None or isinstance(target, ServerModel) else os.fspath(target)


@dataclass(frozen=True)
class JobStarted:
    """The prompt fits and decoding starts."""

    model: str
    prompt_tokens: int
    tool_format: ToolFormat = "hermes"  # how the model writes a call, for reading its calls out of the reply


@dataclass(frozen=True)
class JobFailed:
    status: int  # the HTTP status it means, when nothing has been sent yet
    message: str
    code: str = ""  # the engine's reason, for APIs that name one (app.engine.host.wire.ReplyFailed.code)


@dataclass(frozen=True)
class JobEnded:
    """Always the last record of a job, however it ended."""


@dataclass
class ServeJob:
    """One request in line. `sink` takes each outcome record on the engine's thread and must not block."""

    request: ApiRequest
    sink: Callable[[object], None]
    cancel: threading.Event = field(default_factory=threading.Event)  # the client went away: nothing more
    # The client has what it wants (a stop string came): generation stops, and its FinishedEvent still comes,
    # with the reply's real totals.
    enough: threading.Event = field(default_factory=threading.Event)
    # The HTTP side has read all it will of this job (its last record, or its client went away): whether a stop
    # string ended the reply is known from then on.
    read: threading.Event = field(default_factory=threading.Event)
    serial: int = 0  # set by the queue: 1, 2, ... in the order requests came


class JobQueue:
    """Requests waiting for the engine, oldest first. Any thread submits; only the engine's thread takes.

    `max_waiting` counts the jobs that wait behind those being answered: a job the engine takes as soon as its
    thread comes round (its `room`, the free places of a batch) is not waiting behind anyone, so 8 requests sent
    together to a server that answers 8 at once all run, whatever `max_waiting` says.

    `fileno()` is readable while a job waits, so a loop that also waits on other things (the engine process's
    pipe) can wait on both at once."""

    def __init__(self, max_waiting: int):
        self._max_waiting = max_waiting
        self._jobs: deque[ServeJob] = deque()
        self._lock = threading.Lock()
        self._serial = 0
        self._closed = False
        self._room = 0  # jobs the engine takes as soon as its thread comes round (set_room)
        # One byte in the pipe per waiting job.
        self._read_fd, self._write_fd = os.pipe()

    def fileno(self) -> int:
        return self._read_fd

    def submit(self, job: ServeJob) -> bool:
        """Put `job` in line; False when the line is full or the server is closing."""
        with self._lock:
            if self._closed or len(self._jobs) >= self._max_waiting + self._room:
                return False
            self._serial += 1
            job.serial = self._serial
            self._jobs.append(job)
            os.write(self._write_fd, b"\0")
        return True

    def set_room(self, room: int) -> None:
        """The engine's thread says how many more jobs it answers now (its free places beside those in flight);
        each job it takes fills one."""
        with self._lock:
            self._room = max(0, room)

    def waiting(self) -> int:
        with self._lock:
            return len(self._jobs)

    def take(self, timeout: Optional[float] = None) -> Optional[ServeJob]:
        """The oldest waiting job, or None when none came within `timeout` seconds (None: wait for ever)."""
        if self._closed:
            return None
        try:
            ready, _, _ = select.select([self._read_fd], [], [], timeout)
        except (OSError, ValueError):
            return None  # closed meanwhile
        if not ready:
            return None
        with self._lock:
            if self._closed or not self._jobs:
                return None
            os.read(self._read_fd, 1)
            self._room = max(0, self._room - 1)
            return self._jobs.popleft()

    def close(self) -> None:
        """Refuse new jobs and end the waiting ones with a 503."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            waiting, self._jobs = list(self._jobs), deque()
            for fd in (self._read_fd, self._write_fd):
                os.close(fd)
        for job in waiting:
            job.sink(JobFailed(503, "The server is shutting down."))
            job.sink(JobEnded())


def api_request(request_id: int, request: ApiRequest) -> AnswerChat | AnswerCompletion:
    """What the engine runs for `request`, as the wire's record: the same in this process and across the pipe."""
    if isinstance(request, CompletionRequest):
        return AnswerCompletion(request_id, request.prompt, request.suffix, request.config)
    return AnswerChat(request_id, tuple(request.messages), request.config, request.count_only)


def relay(job: ServeJob, answer: ApiAnswer) -> Optional[FinishedEvent]:
    """Hand one of the engine's answers (app.engine.host.api_answers) to `job`'s sink as the HTTP side reads it;
    returns it when it is the reply's FinishedEvent."""
    if isinstance(answer, ReplyStarted):
        job.sink(JobStarted(model_id(answer.target), answer.prompt_tokens, answer.tool_format))
    elif isinstance(answer, ReplyFailed):
        job.sink(JobFailed(answer.status, answer.message, answer.code))
    elif isinstance(answer, NoticeEvent):
        # The server's own news (its history file damaged, or off), for whoever runs it: the log, once, as the
        # engine says it once; a client is told nothing of this machine's files.
        print(f"note: {printable(answer.text)}", file=sys.stderr, flush=True)
    elif isinstance(answer, FinishedEvent):
        answer = as_read(job, answer)
        job.sink(answer)
        return answer
    else:
        job.sink(answer)
    return None


def as_read(job: ServeJob, finished: FinishedEvent) -> FinishedEvent:
    """`finished` marked as ended by a stop string when the client's stop string ended it, even where the engine
    had finished first (it hears of the stop string a round later, or, in its own process, later still)."""
    if job.enough.is_set() and finished.stats.stop_reason != "stop_string":
        return replace(finished, stats=replace(finished.stats, stop_reason="stop_string"))
    return finished


def run_job(engine: Optional[ChatEngine], job: ServeJob) -> Optional[FinishedEvent]:
    """Answer `job` with `engine`, on the thread that owns it; the client's going away sets job.cancel, which
    generation checks every round. Returns the reply's FinishedEvent (also for a reply a stop string ended), None
    when it was stopped or failed.

    Nothing a request does ends the thread that calls this (app.engine.host.api_answers turns every exception into
    the job's JobFailed)."""
    finished: Optional[FinishedEvent] = None
    try:
        for answer in answer_api(engine, api_request(job.serial, job.request), job.cancel, job.enough):
            finished = relay(job, answer) or finished
    finally:
        job.sink(JobEnded())
    return finished


def work_off(
    queue: JobQueue,
    engine: ChatEngine,
    until: Callable[[], bool] = lambda: False,
    on_done: Optional[Callable[[ServeJob, Optional[FinishedEvent]], None]] = None,
    idle_after_s: float = 1.0,
    poll_s: Optional[float] = None,
) -> None:
    """Answer the queue's jobs one at a time, in order, on this thread (the one that owns `engine`), until
    `until()` (checked every `poll_s` seconds; None: never). Between jobs, once nothing has come for
    `idle_after_s`, the engine does its background measuring a short step at a time."""
    idle_work = False
    while not until():
        timeout = idle_after_s if idle_work else poll_s
        if idle_work and poll_s is not None:
            timeout = min(idle_after_s, poll_s)
        queue.set_room(1)  # the next job is answered as soon as it comes: it waits behind nobody
        job = queue.take(timeout)
        if job is None:
            if idle_work:
                idle_work = engine.idle_step()
            continue
        finished = run_job(engine, job)
        idle_work = True
        if on_done is not None:
            on_done(job, finished)
