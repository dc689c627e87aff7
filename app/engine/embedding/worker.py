"""The embedding process: one Embedder in a child process of its own, beside the chat engine's, and its handle.

Its own process, so embedding never holds up a chat reply (the two decode side by side, sharing the CPU) and a
llama.cpp abort() costs only the request being read: it gets one sentence and a fresh process loads the model again.
The process is run by the one child supervisor (app.engine.host.supervisor: spawn, a log file whose last error line
says why a load ended, a polite end then a kill). EmbeddingWorker's own thread (lasting: a child dies with the
thread that started it, child_process.die_with_parent) is the supervisor's one caller: it starts the process and
hands it one request at a time, in the order they came; callers wait on a Future. At most `max_queued` requests
wait; more are refused at once (EmbeddingBusy), as the chat queue refuses them.

EmbeddingWorker also speaks the documents' protocol (`embed(texts)`, `dim`), so an index can embed out of process.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from concurrent.futures import Future, TimeoutError as FutureTimeout
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from app.engine.child_process import settle_child
from app.engine.embedding.wire import (
    EmbedAnswer,
    Embedded,
    EmbedderLoadFailed,
    EmbedderReady,
    EmbedInputs,
    EmbedRefused,
    EmbedRequest,
    RankDocuments,
    StopEmbedder,
)
from app.engine.host.supervisor import ChildEntry, ChildGone, ChildSupervisor

LOAD_DEADLINE_S = 120.0  # a model's load; a larger model than any embedding model loads well within it
POLL_S = 0.1  # how often a wait for the child looks whether it is still alive, or the worker closing
CLOSE_WAIT_S = 3.0
DEATH_WAIT_S = 1.0  # a child whose pipe closed is dead or dying: this long, then it is killed
_LOG_NUMBERS = itertools.count(1)  # a log file per worker: a window and a test may hold two at once
SHUTTING_DOWN = "The server is shutting down."
CRASHED = "The embedding model's process ended while reading this request; it is starting again."


class EmbeddingStartError(Exception):
    """The embedding model could not be loaded; the message is one sentence for a person."""


class EmbeddingBusy(Exception):
    """Too many requests wait for the embedding model already."""


def run_embedding_process(conn: Connection, log_path: Optional[str], path: str, n_threads: Optional[int]) -> None:
    """The child's loop (the supervisor's entry): load, say so, then answer each request until StopEmbedder or the
    pipe closes."""
    settle_child(log_path)
    from app.engine.embedding.model import Embedder
    from app.engine.errors import EngineError

    try:
        embedder = Embedder(path, n_threads=n_threads)
    except EngineError as exc:
        conn.send(EmbedderLoadFailed(str(exc)))
        return
    conn.send(EmbedderReady(embedder.name, embedder.kind, embedder.dim, embedder.n_ctx))
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if isinstance(request, StopEmbedder):
            return
        try:
            if isinstance(request, RankDocuments):
                read = embedder.rank(request.query, request.documents)
            else:
                read = embedder.embeddings(request.inputs, truncate=request.truncate)
            conn.send(Embedded(request.serial, read.vectors, read.tokens, read.cut))
        except ValueError as exc:
            conn.send(EmbedRefused(request.serial, str(exc)))
        except EngineError as exc:  # llama.cpp failed a pass: the process goes on for the next request
            conn.send(EmbedRefused(request.serial, str(exc)))


class EmbeddingWorker:
    """Loads `path` in an embedding process and answers requests through it. Any thread may call submit, embed and
    rank; start and close belong to the thread that owns the worker."""

    def __init__(
        self,
        path: Path,
        *,
        n_threads: Optional[int] = None,
        max_queued: int = 8,
        say: Callable[[str], None] = lambda line: None,
    ):
        self.path = Path(path)
        self._say = say
        self._child = ChildSupervisor(
            f"embedding-{next(_LOG_NUMBERS)}",
            "SpecChat embedding",
            entry=ChildEntry(run_embedding_process, StopEmbedder(), (str(self.path), n_threads)),
        )
        self._requests: queue.Queue = queue.Queue(maxsize=max(1, max_queued))
        self._serial = 0
        self._serial_lock = threading.Lock()
        self._ready: Future = Future()
        self._closing = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self.model: Optional[EmbedderReady] = None

    # -- lifetime -------------------------------------------------------------------------------------------------

    def start(self) -> EmbedderReady:
        """Start the process and wait until the model is loaded. Raises EmbeddingStartError."""
        self._thread = threading.Thread(target=self._run, name="SpecChat embedding", daemon=True)
        self._thread.start()
        try:
            self.model = self._ready.result(LOAD_DEADLINE_S)
        except FutureTimeout:
            self.close()
            raise EmbeddingStartError(f"{self.path.name} did not load within {LOAD_DEADLINE_S:.0f} s.") from None
        except EmbeddingStartError:
            self.close()
            raise
        return self.model

    def close(self) -> None:
        """End the process; requests still waiting get EmbeddingStartError's sentence."""
        if self._thread is None:
            return
        self._closing.set()  # seen between requests and while one is read: a full queue takes no more
        self._thread.join(CLOSE_WAIT_S + 2)
        self._thread = None

    # -- asking -----------------------------------------------------------------------------------------------------

    @property
    def pid(self) -> Optional[int]:
        """The embedding process's id while it runs."""
        return self._child.pid

    @property
    def dim(self) -> int:
        return self.model.dim if self.model is not None else 0

    def submit(self, build: Callable[[int], EmbedRequest]) -> "Future[EmbedAnswer]":
        """Queue the request `build(serial)` makes; its answer comes in the Future (cancel it to drop the request
        while it waits). Raises EmbeddingBusy when max_queued requests wait already, EmbeddingStartError once the
        worker has closed."""
        if self._closing.is_set():
            raise EmbeddingStartError(SHUTTING_DOWN)
        with self._serial_lock:
            self._serial += 1
            serial = self._serial
        answer: Future = Future()
        try:
            self._requests.put_nowait((build(serial), answer))
        except queue.Full:
            raise EmbeddingBusy("Too many requests wait for the embedding model; try again shortly.") from None
        return answer

    def embed(self, texts: list[str], timeout_s: Optional[float] = None) -> np.ndarray:
        """The documents' protocol: (len(texts), dim) float32, L2-normalised rows (long texts cut to the context).
        Raises ValueError with the embedding process's sentence; TimeoutError when no answer came within
        `timeout_s` (the request is dropped if it still waits)."""
        answer = self.submit(lambda serial: EmbedInputs(serial, tuple(texts), truncate=True))
        try:
            return self._vectors(answer, timeout_s)
        except FutureTimeout:
            answer.cancel()
            raise TimeoutError(f"No answer came within {timeout_s:g} s.") from None

    def rank(self, query: str, documents: Sequence[str]) -> np.ndarray:
        """A reranker's score per document."""
        return self._vectors(self.submit(lambda serial: RankDocuments(serial, query, tuple(documents))))[:, 0]

    @staticmethod
    def _vectors(answer: "Future[EmbedAnswer]", timeout_s: Optional[float] = None) -> np.ndarray:
        result = answer.result(timeout_s)
        if isinstance(result, EmbedRefused):
            raise ValueError(result.message)
        return result.vectors

    # -- the worker's thread ------------------------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._ready.set_result(self._spawn())
        except Exception as exc:
            self._child.close(0)  # its log goes with it
            if not isinstance(exc, EmbeddingStartError):  # the process could not even start (no memory for it, say)
                exc = EmbeddingStartError(f"The embedding process could not start: {exc}")
            self._ready.set_exception(exc)
            return
        while not self._closing.is_set():
            try:
                request, answer = self._requests.get(timeout=POLL_S)
            except queue.Empty:
                continue
            if not answer.set_running_or_notify_cancel():
                continue  # its client went away while it waited
            try:
                answer.set_result(self._ask(request))
            except EmbeddingStartError as exc:
                answer.set_exception(exc)
            except Exception as exc:  # the OS's fault (no process could start): this request's sentence
                answer.set_exception(EmbeddingStartError(f"The embedding process failed: {exc}"))
        self._child.close(CLOSE_WAIT_S)
        while True:  # whoever still waits hears why
            try:
                item = self._requests.get_nowait()
            except queue.Empty:
                break
            if item[1].set_running_or_notify_cancel():
                item[1].set_exception(EmbeddingStartError(SHUTTING_DOWN))

    def _spawn(self) -> EmbedderReady:
        """Start a process and wait for its model; raises EmbeddingStartError with the reason it did not load."""
        self._child.start()
        first = self._receive(LOAD_DEADLINE_S)
        if isinstance(first, EmbedderReady):
            self._child.mark_log()  # a later crash is named by what the process writes after its load
            return first
        if isinstance(first, EmbedderLoadFailed):
            self._child.end(CLOSE_WAIT_S)
            raise EmbeddingStartError(first.message)
        if self._closing.is_set():
            self._child.end(CLOSE_WAIT_S)
            raise EmbeddingStartError(SHUTTING_DOWN)
        if self._child.is_alive():  # silent past the deadline
            self._child.end(CLOSE_WAIT_S)
            raise EmbeddingStartError(f"{self.path.name} did not load within {LOAD_DEADLINE_S:.0f} s.")
        end = self._child.reap(DEATH_WAIT_S)
        said = f": {end.detail}" if end.detail else ""
        raise EmbeddingStartError(f"The embedding process ended ({end.how}) while loading {self.path.name}{said}.")

    def _ask(self, request: EmbedRequest) -> EmbedAnswer:
        if not self._child.has_child:  # it could not be started again after a crash: one more try for this request
            self._spawn()
        self._child.send(request)
        answer = self._receive(None)
        if isinstance(answer, (Embedded, EmbedRefused)) and answer.serial == request.serial:
            return answer
        if self._closing.is_set():
            raise EmbeddingStartError(SHUTTING_DOWN)
        end = self._child.reap(DEATH_WAIT_S)
        said = f"; llama.cpp said: {end.detail}" if end.detail else ""
        self._say(f"The embedding process ended ({end.how}{said}); starting it again.")
        try:
            self._spawn()
        except EmbeddingStartError as exc:
            self._say(f"The embedding model could not be loaded again: {exc}")
        raise EmbeddingStartError(CRASHED)

    def _receive(self, deadline_s: Optional[float]) -> object:
        """The child's next record, or None when it dies (or stays silent past `deadline_s`, or the worker closes)."""
        deadline = None if deadline_s is None else time.monotonic() + deadline_s
        while (deadline is None or time.monotonic() < deadline) and not self._closing.is_set():
            try:
                record = self._child.receive(POLL_S)
            except ChildGone:
                return None
            if record is not None:
                return record
            if not self._child.is_alive():
                return None
        return None
