"""`specchat-cli serve`'s handle on its engine process: the HTTP side's jobs go in, the engine's answers come out.

The models run in a child process (app.engine.host.worker, the loop the window's engine process runs), so a
llama.cpp crash (SIGSEGV, abort()) costs only the requests in flight: each gets one error with a sentence, a fresh
child loads the same models, and the requests waiting in line are answered by it. No Qt: the main thread runs
`work_off`, and the HTTP side (uvicorn, the JobQueue) never notices a crash but through those errors.

Every record on the wire carries its request id, and requests in flight are kept by id (app.serve.engine.flights,
shared with the window's API), so the child answers as many at once as it decodes side by side (ModelsLoaded's
`parallel`, `serve --parallel`): that many are sent to it at a time, the rest wait in the JobQueue. Cancelling
crosses as a flag per request (app.engine.host.stops). Requests are sent by a thread of their own (_Sender): the
child reads its pipe only between steps, and a long request sent from the thread that reads its answers could
wait on a child that waits for its answers to be read.

The child's stderr goes to a log file (so its last words can be read after a crash: child_process.log_error_line),
which a thread copies to this process's stderr as it grows, so the server's log reads as before.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import threading
import time
from multiprocessing.connection import Connection, wait
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Callable, Optional

from app.common.text import printable
from app.engine.child_process import how_it_ended, log_error_line, log_size
from app.engine.config import LoadSettings
from app.engine.host.stops import StopBoard
from app.engine.host.wire import LoadFailed, LoadModels, ModelsLoaded, ReplyEnded, Shutdown
from app.engine.host.worker import run_worker
from app.engine.targets import Target
from app.platform import paths
from app.serve.engine.flights import (
    READING_GRACE_S,
    STOP_GRACE_S,
    ApiFlights,
    OnDone,
    death_sentence,
    restarting,
    unsendable_sentence,
)
from app.serve.jobs import JobQueue, ServedModels, ServeJob, api_request, loaded_models

POLL_S = 0.05  # how soon a client's going away (or its stop string) reaches the child while it answers
CLOSE_WAIT_S = 3.0  # a child asked to exit gets this long before it is killed
LOG_POLL_S = 0.2
LOG_TAIL_BYTES = 16384
SHUTTING_DOWN = "The server is shutting down."


class EngineStartError(Exception):
    """The engine process could not load the models; the message is one sentence for a person."""


class EngineClient:
    """Starts the engine process with `target` and `draft` loaded, answers a JobQueue through it, and restarts it
    when it dies. One thread only (the main thread: a child ends with the thread that started it, see
    child_process.die_with_parent)."""

    def __init__(
        self,
        target: Target,
        draft: Optional[Path],
        load: LoadSettings,
        engine_factory: Optional[Callable] = None,
        say: Callable[[str], None] = lambda line: None,
        projector: Optional[Path] = None,
    ):
        self._target, self._draft, self._load = target, draft, load
        self._projector = projector  # the target's mmproj, so it reads pictures
        self._engine_factory = engine_factory  # tests' engines; must be picklable (a module-level function)
        self._say = say  # one line for the server's log
        self._context = multiprocessing.get_context("spawn")
        self._cancelled_up_to = self._context.RawValue("q", 0)  # the worker's own Stop (unused by serve)
        self._gone = StopBoard(self._context)  # the worker's api_gone
        self._enough = StopBoard(self._context)
        self._process: Optional[multiprocessing.process.BaseProcess] = None
        self._conn: Optional[Connection] = None
        self._last_id = 0
        self._flights = ApiFlights(self._gone, self._enough)
        self._log_path = str(paths.user_cache_dir() / f"serve-engine-{os.getpid()}.log")
        self._log_since = 0  # where the log reached when a reply last ended: a death is named by what came after
        self._echo: Optional[_LogEcho] = None
        self._sender: Optional[_Sender] = None
        self.served = ServedModels()
        self.placement_note = ""  # where the models run and what they were loaded with, in words

    @property
    def pid(self) -> Optional[int]:
        return self._process.pid if self._process is not None else None

    # ----- the child's lifetime

    def start(self) -> ServedModels:
        """Start the engine process and load the models. Raises EngineStartError."""
        Path(self._log_path).parent.mkdir(parents=True, exist_ok=True)
        with open(self._log_path, "w"):
            pass  # a fresh log per child: its tail is this child's last words
        self._log_since = 0
        if self._echo is None:
            self._echo = _LogEcho(self._log_path)
        parent_conn, child_conn = self._context.Pipe()
        self._process = self._context.Process(
            target=run_worker,
            name="SpecChat serve engine",
            daemon=True,
            args=(child_conn, self._cancelled_up_to, self._log_path, self._engine_factory, self._gone, self._enough),
        )
        self._process.start()
        child_conn.close()
        self._conn = parent_conn
        self._last_id += 1
        parent_conn.send(LoadModels(self._last_id, self._target, self._draft, self._load, self._projector))
        self._sender = _Sender(parent_conn)
        while True:
            try:
                message = parent_conn.recv()
            except (EOFError, OSError):
                raise EngineStartError(self._death("while loading the model")[1]) from None
            if isinstance(message, LoadFailed):
                self._end_child()
                raise EngineStartError(message.message)
            if isinstance(message, ModelsLoaded):
                self.served = loaded_models(message)
                self.placement_note = message.placement_note
                return self.served

    def _death(self, doing: str) -> tuple[str, str]:
        """Reap the dead child and put its end in words: "The engine stopped (killed by SIGSEGV) while ...", and
        the same with llama.cpp's last words for this machine's log (a client is told nothing of its files)."""
        code = self._end_child()
        sentence = death_sentence(how_it_ended(code), doing)
        detail = log_error_line(self._log_path, LOG_TAIL_BYTES, since=self._log_since)
        return sentence, sentence + (f"; llama.cpp said: {detail}" if detail else "") + "."

    def _end_child(self, ask: bool = False) -> Optional[int]:
        """End the child (asking first when `ask`) and return its exit code."""
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if self._sender is not None:
            self._sender.stop()
            self._sender = None
        if conn is not None and ask:
            try:
                conn.send(Shutdown())
            except (OSError, ValueError):
                pass
        if process is None:
            return None
        process.join(CLOSE_WAIT_S if ask else 2)
        if process.is_alive():
            process.kill()
            process.join(2)
        if conn is not None:
            conn.close()
        return process.exitcode

    def close(self) -> None:
        """Stop the child (asked, then killed after CLOSE_WAIT_S) and end the requests still in flight."""
        self._gone.stop_all()  # whatever it answers stops at the next round
        self._end_child(ask=True)
        self._flights.report_read(everything=True)
        self._flights.fail_all(503, SHUTTING_DOWN)
        if self._echo is not None:
            self._echo.stop()
            self._echo = None
        try:
            os.unlink(self._log_path)
        except OSError:
            pass

    # ----- answering

    def work_off(
        self, queue: JobQueue, until: Callable[[], bool] = lambda: False, on_done: Optional[OnDone] = None
    ) -> None:
        """Answer the queue's jobs through the child, in order, until `until()` (checked every POLL_S while a
        request is in flight, else every second); `on_done(job, finished)` once the HTTP side has read each answered
        job. Raises EngineStartError when a restarted child cannot load."""
        self._flights.on_done = on_done
        while not until() and self._conn is not None:
            room = max(1, self.served.parallel) - len(self._flights)
            queue.set_room(room)  # what the child takes at once is not waiting behind anyone
            watched: list = [self._conn]
            if room > 0:
                watched.append(queue.fileno())
            try:
                ready = wait(watched, POLL_S if len(self._flights) or self._flights.waiting_to_report else 1.0)
            except (OSError, ValueError):
                return  # the queue was closed: the server is stopping
            if self._flights.forward_stops() and self._process is not None and self._process.is_alive():
                self._say(
                    "note: the engine did not stop in time after a client went away (stuck in a chat template or "
                    f"in llama.cpp: {STOP_GRACE_S:.0f} s, or {READING_GRACE_S:.0f} s while a prompt is read), so it "
                    "is restarted."
                )
                self._process.kill()  # its pipe closes: the next round restarts it
            self._flights.report_read()
            if self._conn in ready:
                try:
                    message = self._conn.recv()
                except Exception:  # the pipe closed (it died), or a record that cannot be read: not to be trusted
                    self._restart()
                    continue
                self._flights.on_reply(message)
                if isinstance(message, ReplyEnded):
                    self._log_since = log_size(self._log_path)
            # A waiting request is sent in the same turn as a record is read: a reply streaming records without a
            # pause kept the pipe always ready, and a request sent together with it joined the batch 1.5 s late.
            # Every waiting request that fits goes in the same turn, so requests sent together join one step.
            while any(item is not self._conn for item in ready) and len(self._flights) < max(1, self.served.parallel):
                job = queue.take(0)
                if job is None:
                    break
                self._send(job)

    def _send(self, job: ServeJob) -> None:
        assert self._conn is not None  # work_off runs while a child does
        self._last_id += 1
        self._flights.add(self._last_id, job)
        try:
            data = bytes(ForkingPickler.dumps(api_request(self._last_id, job.request)))
        except Exception as exc:  # a request that cannot cross the pipe (a bug of ours): it alone fails
            self._flights.fail(self._last_id, 500, unsendable_sentence(exc))
            return
        if self._sender is not None:
            self._sender.put(data)

    def _restart(self) -> None:
        """The child died: its requests in flight get one error each, and a fresh child loads the same models."""
        sentence, logged = self._death("while answering" if len(self._flights) else "between requests")
        self._say(f"note: {logged}")
        self._flights.fail_all(500, restarting(sentence))
        began = time.monotonic()
        self.start()
        self._say(f"The engine is back ({time.monotonic() - began:.1f} s to restart and load the model).")


class _Sender:
    """Sends pickled requests down the pipe from a thread of its own (see the module's docstring). A send that
    fails (the child is gone) is dropped: reading the pipe says so, and fails the jobs in flight."""

    def __init__(self, conn: Connection):
        self._conn = conn
        self._queue: queue.SimpleQueue[Optional[bytes]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="SpecChat engine sender", daemon=True)
        self._thread.start()

    def put(self, data: bytes) -> None:
        self._queue.put(data)

    def _run(self) -> None:
        while True:
            data = self._queue.get()
            if data is None:
                return
            try:
                self._conn.send_bytes(data)
            except (OSError, ValueError):
                pass

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(2)


class _LogEcho:
    """Copies what the child writes to its log file onto this process's stderr, as it grows (a thread)."""

    def __init__(self, path: str):
        self._path = path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="SpecChat engine log", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        offset = 0
        while not self._stop.wait(LOG_POLL_S):
            offset = self._copy(offset)
        self._copy(offset)

    def _copy(self, offset: int) -> int:
        try:
            with open(self._path, "rb") as log:
                size = os.fstat(log.fileno()).st_size
                if size < offset:
                    offset = 0  # a fresh child's fresh log
                log.seek(offset)
                data = log.read(1 << 20)
        except OSError:
            return offset
        if data:  # through the one gate for shown text: a traceback can quote what a client sent
            sys.stderr.write(printable(data.decode("utf-8", errors="replace")))
            sys.stderr.flush()
        return offset + len(data)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(2)
