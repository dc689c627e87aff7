"""One child process at a time, supervised: started, fed, watched, put in words when it dies, ended and restarted.

The window (app.ui.engine_link.engine_process) and `specchat-cli serve` (app.serve.engine.client) both run the
engine's loop (app.engine.host.worker) in a child process, because llama.cpp can abort() its process, and the
embedding worker (app.engine.embedding.worker) its embedding model's loop, for the same reason; this is the
one handle on such a child they share, plain Python with no Qt. Which loop the child runs is its ChildEntry (the
engine's unless told). What each caller does with the replies (signals, routing API jobs) and what a death means
to it stays with the caller.

- Start: "spawn" (a fork would copy the window's threads and Qt), a fresh log file per child for its stderr, so its
  last words can be read after a crash (child_process.log_error_line), and the shared stop flags every engine child
  gets.
- Send: the request is pickled on the caller's thread (a request that cannot cross fails there, alone) and written
  by a thread of its own: the child reads its pipe only between steps, and a caller that also reads its answers
  could otherwise wait on a child that waits for its answers to be read.
- Receive: either a reader thread per child hands every reply to `on_reply` (the window), or the caller waits on
  `connection` and calls `receive` (serve). A pipe that closes or carries what cannot be read means the child is
  gone: `on_gone`, or ChildGone.
- A death: `reap` (or `restart`) ends what is left of the child and says how it ended, with the last error line it
  wrote since `mark_log` (a crash is never blamed on what an earlier, finished piece of work wrote).
- An end: `end` asks (the entry's `goodbye`: the engine's Shutdown), waits its deadline, then kills; `close`, the
  last one, first sets the stop flags so whatever the child answers stops at its next round. Children the
  supervisor ends itself are never reported as gone.

Which thread may call it: one thread (the window's GUI thread, serve's main thread, the embedding worker's own); a
child dies with the thread that started it (child_process.die_with_parent), so that thread must last. `on_reply`
and `on_gone` run on the reader thread.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import sys
import threading
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from multiprocessing.reduction import ForkingPickler
from typing import Callable, Optional

from app.common.text import printable
from app.engine.child_process import how_it_ended, is_build_fault, log_error_line, log_size
from app.engine.host.stops import StopBoard
from app.engine.host.wire import Reply, Shutdown
from app.engine.host.worker import run_worker
from app.platform import paths

LOG_TAIL_BYTES = 16384
KILL_WAIT_S = 2.0  # a killed child is reaped within this; the kernel ends it at once
THREAD_WAIT_S = 1.0  # the sender and reader threads end with their pipe; this long at most is waited for each
LOG_POLL_S = 0.2
STOP_EVERYTHING = 2**62  # a cancelled_up_to that stops every request of the window's

OnReply = Callable[[int, Reply], None]  # (incarnation, reply)
OnGone = Callable[[int], None]  # (incarnation)


class ChildGone(Exception):
    """The child's pipe closed, or carried what cannot be read: it died, or is in a state not to be trusted."""


@dataclass(frozen=True)
class ChildEnd:
    """How a child ended, and what it said last."""

    exit_code: Optional[int]
    detail: str  # the last error line it wrote since the mark (llama.cpp's assertion, say), or ""

    @property
    def how(self) -> str:
        """ "killed by SIGSEGV", "exit status 3" (child_process.how_it_ended)."""
        return how_it_ended(self.exit_code)

    @property
    def build_fault(self) -> bool:
        """SIGILL: this llama.cpp build cannot run here; running it again crashes again."""
        return is_build_fault(self.exit_code)


@dataclass(frozen=True)
class ChildEntry:
    """What a child runs: `target(conn, log_path, *args)` in a fresh process ("spawn": a module-level function and
    picklable arguments), which sends its log_path's fd 2 there (child_process.settle_child); `goodbye` is the
    message that asks it to exit."""

    target: Callable[..., None]
    goodbye: object
    args: tuple = ()


class ChildSupervisor:
    """One child process at a time (see the module's docstring for which thread may call what)."""

    def __init__(
        self,
        log_name: str,
        process_name: str,
        engine_factory: Optional[Callable] = None,
        on_reply: Optional[OnReply] = None,
        on_gone: Optional[OnGone] = None,
        echo_log: bool = False,
        entry: Optional[ChildEntry] = None,
    ):
        """`log_name`: the log file's name before the pid ("engine-worker"); `engine_factory`: the child's engine
        maker (None: the real one; tests' must be picklable); `on_reply`/`on_gone`: a reader thread reports to them
        (None: the caller receives); `echo_log`: copy the child's log onto this process's stderr as it grows, so
        serve's log reads as if the child wrote there; `entry`: what the child runs (None: the engine's loop, with
        `engine_factory` and the stop flags below)."""
        self._log_name, self._process_name = log_name, process_name
        self._on_reply, self._on_gone = on_reply, on_gone
        self._echo_log = echo_log
        self.context = multiprocessing.get_context("spawn")
        # Shared with every engine child this supervisor starts: the window's Stop (every request up to an id), and
        # the API's flags per request (app.engine.host.stops).
        self.cancelled_up_to = self.context.RawValue("q", 0)
        self.api_gone = StopBoard(self.context)
        self.api_enough = StopBoard(self.context)
        self._entry = entry or ChildEntry(
            run_worker, Shutdown(), (self.cancelled_up_to, engine_factory, self.api_gone, self.api_enough)
        )
        self.incarnation = 0  # counts the children started: a reply or an end from an earlier one is stale
        self._process: Optional[BaseProcess] = None
        self._conn: Optional[Connection] = None
        self._sender: Optional[_Sender] = None
        self._reader: Optional[_Reader] = None
        self._echo: Optional[_LogEcho] = None
        self.log_path = str(paths.user_cache_dir() / f"{log_name}-{os.getpid()}.log")
        self._log_since = 0

    # ----- the child's lifetime

    def start(self) -> None:
        """Start a fresh child (no models loaded), with a fresh log; the one before must have been ended."""
        assert self._process is None, "end or reap the child first"
        self.incarnation += 1
        log_dir = paths.user_cache_dir()
        log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = str(log_dir / f"{self._log_name}-{os.getpid()}.log")
        with open(self.log_path, "w"):
            pass  # a fresh log per child: its tail is this child's last words
        self._log_since = 0
        if self._echo_log and self._echo is None:
            self._echo = _LogEcho(self.log_path, self._process_name)
        parent_conn, child_conn = self.context.Pipe()
        process = self.context.Process(
            target=self._entry.target,
            args=(child_conn, self.log_path, *self._entry.args),
            name=self._process_name,
            daemon=True,
        )
        process.start()
        child_conn.close()
        self._process, self._conn = process, parent_conn
        self._sender = _Sender(parent_conn, self._process_name)
        if self._on_reply is not None or self._on_gone is not None:
            self._reader = _Reader(parent_conn, self.incarnation, self._on_reply, self._on_gone, self._process_name)

    @property
    def has_child(self) -> bool:
        """A child was started and not yet ended or reaped (it may have died since)."""
        return self._process is not None

    def is_alive(self) -> bool:
        return self._process is not None and self._process.is_alive()

    @property
    def pid(self) -> Optional[int]:
        return self._process.pid if self._process is not None else None

    @property
    def connection(self) -> Optional[Connection]:
        """The pipe's end to wait on (multiprocessing.connection.wait) before `receive`; None without a child."""
        return self._conn

    def kill(self) -> None:
        """Kill the child at once (a stuck one): its pipe closes, and its death is reported as any other."""
        if self._process is not None and self._process.is_alive():
            self._process.kill()

    def reap(self, wait_s: float) -> ChildEnd:
        """End a child that died or must die: give it `wait_s` to be gone, kill it, and say how it ended."""
        code = self._finish(wait_s)
        return ChildEnd(code, log_error_line(self.log_path, LOG_TAIL_BYTES, since=self._log_since))

    def restart(self, wait_s: float) -> ChildEnd:
        """`reap`, then `start` a fresh child."""
        end = self.reap(wait_s)
        self.start()
        return end

    def end(self, wait_s: float) -> bool:
        """End the child politely, then firmly: it is asked to exit (after what it reads before), and killed after
        `wait_s`. True when it exited by itself (or there was none)."""
        process = self._process
        if process is None:
            return True
        if self._reader is not None:
            self._reader.quiet()  # an exit asked for is nobody's news
        self.send(self._entry.goodbye)
        process.join(wait_s)
        clean = not process.is_alive()
        self._finish(0)
        return clean

    def close(self, wait_s: float) -> bool:
        """The last end: whatever the child answers stops at its next round (the stop flags stay set: no child is
        to be started after), then `end`; the log is no longer copied, and removed. True when it exited by itself."""
        self.cancelled_up_to.value = STOP_EVERYTHING
        self.api_gone.stop_all()
        clean = self.end(wait_s)
        if self._echo is not None:
            self._echo.stop()
            self._echo = None
        try:
            os.unlink(self.log_path)
        except OSError:
            pass
        return clean

    def _finish(self, wait_s: float) -> Optional[int]:
        """Reap the child (killed if it outlives `wait_s`), end its threads and close its pipe; its exit code."""
        process, conn, sender, reader = self._process, self._conn, self._sender, self._reader
        self._process = self._conn = self._sender = self._reader = None
        if reader is not None:
            reader.quiet()  # an end the supervisor brings is nobody's news
        if process is None:
            return None
        process.join(wait_s)
        if process.is_alive():
            process.kill()
        process.join(KILL_WAIT_S)
        # The child's end of the pipe is closed now, so a write or a read blocked on it has returned: the threads
        # end before the pipe is closed under them.
        if sender is not None:
            sender.stop()
        if reader is not None:
            reader.join()
        if conn is not None:
            try:
                conn.close()
            except OSError:
                pass
        return process.exitcode

    # ----- requests and replies

    def send(self, message: object) -> None:
        """Send `message` without waiting for the child to read it. Pickled here: a message that cannot cross
        raises here (pickle's own error) and nothing is sent. Without a child, nothing is sent."""
        if self._sender is None:
            return
        self._sender.put_bytes(bytes(ForkingPickler.dumps(message)))

    def receive(self, timeout: Optional[float] = None) -> Optional[Reply]:
        """The child's next reply (typed as the engine's; another entry's child sends records of its own), waiting
        up to `timeout` (None: until one comes); None when none came in time. Raises ChildGone when the pipe closed
        or carried what cannot be read (reap the child then)."""
        conn = self._conn
        if conn is None:
            raise ChildGone()
        try:
            if timeout is not None and not conn.poll(timeout):
                return None
            return conn.recv()
        except Exception:  # EOFError, OSError, or an unpicklable reply: nothing more from it is to be trusted
            raise ChildGone() from None

    def mark_log(self) -> None:
        """What the child wrote so far belongs to work now finished: a death is named by what it writes after."""
        self._log_since = log_size(self.log_path)


class _Sender:
    """Writes pickled requests down the pipe from a thread of its own, in order. A write that fails (the child is
    gone) is dropped: reading the pipe says so."""

    def __init__(self, conn: Connection, process_name: str):
        self._conn = conn
        self._queue: queue.SimpleQueue[Optional[bytes]] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name=f"{process_name} sender", daemon=True)
        self._thread.start()

    def put_bytes(self, data: bytes) -> None:
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
        self._thread.join(THREAD_WAIT_S)


class _Reader:
    """Reads one child's replies on a thread of its own and hands each to `on_reply`, then says when the pipe
    closes (`on_gone`), unless the supervisor ended the child itself."""

    def __init__(
        self,
        conn: Connection,
        incarnation: int,
        on_reply: Optional[OnReply],
        on_gone: Optional[OnGone],
        process_name: str,
    ):
        self._conn, self._incarnation = conn, incarnation
        self._on_reply, self._on_gone = on_reply, on_gone
        self._quiet = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{process_name} reader", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while True:
            try:
                message = self._conn.recv()
            except Exception:  # the pipe closed, or a reply that cannot be read: the child is not to be trusted
                break
            if self._quiet.is_set():
                return
            if self._on_reply is not None:
                self._on_reply(self._incarnation, message)
        if not self._quiet.is_set() and self._on_gone is not None:
            self._on_gone(self._incarnation)

    def quiet(self) -> None:
        self._quiet.set()

    def join(self) -> None:
        self._thread.join(THREAD_WAIT_S)


class _LogEcho:
    """Copies what the children write to their log file onto this process's stderr, as it grows (a thread)."""

    def __init__(self, path: str, process_name: str):
        self._path = path
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{process_name} log", daemon=True)
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
