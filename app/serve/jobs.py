"""Requests waiting for the engine, in order, and running one on the thread that owns the models.

The HTTP side (any thread) submits a ServeJob; the thread that owns the engine (the CLI's main thread, or the
engine process's loop) takes jobs one at a time and runs them with `run_job`, which hands every event to the
job's `sink`. A job's outcome is a short sequence of records: JobStarted or JobFailed, the engine's own events,
and always JobEnded last.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import traceback
from collections import deque
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

from app.common.text import printable
from app.engine.errors import EngineError, GrammarError, PromptFormatError, PromptTooLongError
from app.engine.events import FinishedEvent, NoticeEvent
from app.engine.protocol import ChatEngine
from app.engine.targets import ServerModel, Target
from app.engine.tools.calls import ToolFormat
from app.serve.completions.requests import ApiRequest, CompletionRequest

STOPPED = "The reply was stopped in the SpecChat window."
NO_MODEL = "No model is loaded; load one in SpecChat (or start `specchat-cli serve --target MODEL.gguf`)."


@dataclass(frozen=True)
class ServedModels:
    """What the server answers with now, as /v1/models lists it; read by the HTTP side, written by the engine's."""

    target: str = ""  # the model id clients name ("" when nothing is loaded)
    draft: str = ""  # the draft model's id, or "" (n-gram lookup or plain decoding)
    n_ctx: int = 0


def model_id(target: Target | Path | None) -> str:
    """The id a client names a model by: the GGUF file's name without .gguf, or a server model's own id."""
    if target is None:
        return ""
    if isinstance(target, ServerModel):
        return target.model
    return Path(target).name.removesuffix(".gguf")


def served_models(engine: Optional[ChatEngine]) -> ServedModels:
    """Call on the engine's thread."""
    if engine is None or engine.loaded_target is None:
        return ServedModels()
    return ServedModels(model_id(engine.loaded_target), model_id(engine.draft_path), engine.n_ctx)


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


@dataclass(frozen=True)
class JobEnded:
    """Always the last record of a job, however it ended."""


class AnyCancel:
    """Set when any of its flags is: the client went away, or Stop was pressed in the window."""

    def __init__(self, *flags):
        self._flags = flags

    def is_set(self) -> bool:
        return any(flag.is_set() for flag in self._flags)


@dataclass
class ServeJob:
    """One request in line. `sink` takes each outcome record on the engine's thread and must not block."""

    request: ApiRequest
    sink: Callable[[object], None]
    cancel: threading.Event = field(default_factory=threading.Event)  # the client went away: nothing more
    # The client has what it wants (a stop string came): generation stops, and its FinishedEvent still comes,
    # with the reply's real totals.
    enough: threading.Event = field(default_factory=threading.Event)
    serial: int = 0  # set by the queue: 1, 2, ... in the order requests came


class JobQueue:
    """Requests waiting for the engine, oldest first. Any thread submits; only the engine's thread takes.

    `fileno()` is readable while a job waits, so a loop that also waits on other things (the engine process's
    pipe) can wait on both at once."""

    def __init__(self, max_waiting: int):
        self._max_waiting = max_waiting
        self._jobs: deque[ServeJob] = deque()
        self._lock = threading.Lock()
        self._serial = 0
        self._closed = False
        # One byte in the pipe per waiting job.
        self._read_fd, self._write_fd = os.pipe()

    def fileno(self) -> int:
        return self._read_fd

    def submit(self, job: ServeJob) -> bool:
        """Put `job` in line; False when the line is full or the server is closing."""
        with self._lock:
            if self._closed or len(self._jobs) >= self._max_waiting:
                return False
            self._serial += 1
            job.serial = self._serial
            self._jobs.append(job)
            os.write(self._write_fd, b"\0")
        return True

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


def run_job(engine: Optional[ChatEngine], job: ServeJob, stopped=None) -> Optional[FinishedEvent]:
    """Answer `job` with `engine`, on the thread that owns it. `stopped` (with is_set()) is a second way to stop,
    such as the window's Stop; the client's going away sets job.cancel. Generation checks both every round.
    Returns the reply's FinishedEvent (also for a reply a stop string ended), None when it was stopped or failed.

    Nothing a request does ends the thread that calls this: every exception (a template's, the engine's, a bug
    of ours) becomes the job's JobFailed, 400 when the request asked for what cannot be done, else 500."""
    gone = AnyCancel(job.cancel, stopped) if stopped is not None else job.cancel
    cancel = AnyCancel(job.cancel, job.enough, *([stopped] if stopped is not None else []))
    finished: Optional[FinishedEvent] = None
    try:
        if gone.is_set():
            return None
        if engine is None or engine.loaded_target is None:
            job.sink(JobFailed(503, NO_MODEL))
            return None
        request = job.request
        if isinstance(request, CompletionRequest):
            tokens = engine.completion_tokens(request.prompt, request.suffix)
            prompt_tokens, what = len(tokens), "prompt"
        else:
            messages = list(request.messages)
            if len(messages) > engine.n_ctx:  # every message takes a token at least: no need to format them
                job.sink(JobFailed(400, f"The request holds {len(messages)} messages; the loaded context of "
                                        f"{engine.n_ctx} tokens cannot hold that many."))
                return None
            prompt_tokens, what = engine.count_tokens(messages), "messages"
        if prompt_tokens >= engine.n_ctx:
            job.sink(JobFailed(400, f"The {what} take {prompt_tokens} tokens; the loaded context holds "
                                    f"{engine.n_ctx}."))
            return None
        # Asked before JobStarted: what an engine refuses when asked (a server's model and logprobs) is a 400 with
        # its status line, streamed or not.
        if isinstance(request, CompletionRequest):
            events = engine.complete(tokens, request.config, cancel=cancel, request_id=job.serial)
        else:
            events = engine.chat(messages, request.config, cancel=cancel, request_id=job.serial)
        job.sink(JobStarted(model_id(engine.loaded_target), prompt_tokens, engine.tool_format))
        for event in events:
            if gone.is_set():
                break
            if isinstance(event, FinishedEvent):
                if job.enough.is_set():
                    event = replace(event, stats=replace(event.stats, stop_reason="stop_string"))
                finished = event
            elif job.enough.is_set():
                continue  # past the stop string: nobody reads it
            elif isinstance(event, NoticeEvent):
                # The server's own news (its history file damaged, or off), for whoever runs it: the log, once,
                # as the engine says it once; a client is told nothing of this machine's files.
                print(f"note: {printable(event.text)}", file=sys.stderr, flush=True)
                continue
            job.sink(event)
        if finished is None and stopped is not None and stopped.is_set() and not job.cancel.is_set():
            job.sink(JobFailed(503, STOPPED))  # the client is still there: it hears why its reply ended
    except (KeyboardInterrupt, SystemExit):
        raise
    except PromptTooLongError as exc:
        job.sink(JobFailed(400, f"The messages take {exc.n_prompt} tokens; the loaded context holds {exc.n_ctx}."))
    except (PromptFormatError, GrammarError) as exc:
        job.sink(JobFailed(400, str(exc)))
    except EngineError as exc:
        job.sink(JobFailed(500, str(exc)))
    except BaseException as exc:  # a bug of ours, or a template's own exception: it ends this request only
        traceback.print_exc()
        job.sink(JobFailed(500, f"The server failed while answering this request ({type(exc).__name__}); its "
                                "log has the details."))
    finally:
        job.sink(JobEnded())
    return finished


def work_off(queue: JobQueue, engine: ChatEngine, until: Callable[[], bool] = lambda: False,
             on_done: Optional[Callable[[ServeJob, Optional[FinishedEvent]], None]] = None,
             idle_after_s: float = 1.0, poll_s: Optional[float] = None) -> None:
    """Answer the queue's jobs one at a time, in order, on this thread (the one that owns `engine`), until
    `until()` (checked every `poll_s` seconds; None: never). Between jobs, once nothing has come for
    `idle_after_s`, the engine does its background measuring a short step at a time."""
    idle_work = False
    while not until():
        timeout = idle_after_s if idle_work else poll_s
        if idle_work and poll_s is not None:
            timeout = min(idle_after_s, poll_s)
        job = queue.take(timeout)
        if job is None:
            if idle_work:
                idle_work = engine.idle_step()
            continue
        finished = run_job(engine, job)
        idle_work = True
        if on_done is not None:
            on_done(job, finished)
