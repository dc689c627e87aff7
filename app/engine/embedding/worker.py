"""The embedding process: one Embedder in a child process of its own, beside the chat engine's, and its handle.

Its own process, so embedding never holds up a chat reply (the two decode side by side, sharing the CPU) and a
llama.cpp abort() costs only the request being read: it gets one sentence and a fresh process loads the model again.
EmbeddingWorker's own thread (lasting: a child dies with the thread that started it, child_process.die_with_parent)
starts the process and hands it one request at a time, in the order they came; callers wait on a Future. At most
`max_queued` requests wait; more are refused at once (EmbeddingBusy), as the chat queue refuses them.

EmbeddingWorker also speaks the documents' protocol (`embed(texts)`, `dim`), so an index can embed out of process.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
from concurrent.futures import Future, TimeoutError as FutureTimeout
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Callable, Optional, Sequence

import numpy as np

from app.engine.child_process import die_with_parent
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

LOAD_DEADLINE_S = 120.0  # a model's load; a larger model than any embedding model loads well within it
POLL_S = 0.1  # how often a wait for the child looks whether it is still alive
CLOSE_WAIT_S = 3.0
SHUTTING_DOWN = "The server is shutting down."
CRASHED = "The embedding model's process ended while reading this request; it is starting again."


class EmbeddingStartError(Exception):
    """The embedding model could not be loaded; the message is one sentence for a person."""


class EmbeddingBusy(Exception):
    """Too many requests wait for the embedding model already."""


def run_embedding_process(conn: Connection, path: str, n_threads: Optional[int]) -> None:
    """The child's loop: load, say so, then answer each request until StopEmbedder or the pipe closes."""
    die_with_parent()
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
        self._n_threads = n_threads
        self._say = say
        self._context = multiprocessing.get_context("spawn")
        self._requests: queue.Queue = queue.Queue(maxsize=max(1, max_queued))
        self._serial = 0
        self._serial_lock = threading.Lock()
        self._ready: Future = Future()
        self._closing = threading.Event()
        self._thread: Optional[threading.Thread] = None
        self._process: Optional[multiprocessing.process.BaseProcess] = None
        self._conn: Optional[Connection] = None
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
        process = self._process
        return process.pid if process is not None else None

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
        except EmbeddingStartError as exc:
            self._ready.set_exception(exc)
            return
        except Exception as exc:  # the process could not even start (no memory for it, say)
            self._ready.set_exception(EmbeddingStartError(f"The embedding process could not start: {exc}"))
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
        self._stop_process()
        while True:  # whoever still waits hears why
            try:
                item = self._requests.get_nowait()
            except queue.Empty:
                break
            if item[1].set_running_or_notify_cancel():
                item[1].set_exception(EmbeddingStartError(SHUTTING_DOWN))

    def _spawn(self) -> EmbedderReady:
        parent, child = self._context.Pipe()
        process = self._context.Process(
            target=run_embedding_process,
            args=(child, str(self.path), self._n_threads),
            name="SpecChat embedding",
            daemon=True,
        )
        process.start()
        child.close()
        self._process, self._conn = process, parent
        first = self._receive(LOAD_DEADLINE_S)
        if isinstance(first, EmbedderReady):
            return first
        self._stop_process()
        if isinstance(first, EmbedderLoadFailed):
            raise EmbeddingStartError(first.message)
        raise EmbeddingStartError(f"The embedding process ended while loading {self.path.name}.")

    def _ask(self, request: EmbedRequest) -> EmbedAnswer:
        if self._conn is None:  # it could not be started again after a crash: one more try for this request
            self._spawn()
        assert self._conn is not None
        try:
            self._conn.send(request)
        except (OSError, ValueError):
            pass  # the child is gone: _receive says so
        answer = self._receive(None)
        if isinstance(answer, (Embedded, EmbedRefused)) and answer.serial == request.serial:
            return answer
        if self._closing.is_set():
            raise EmbeddingStartError(SHUTTING_DOWN)
        self._say("The embedding process ended; starting it again.")
        self._stop_process()
        try:
            self._spawn()
        except EmbeddingStartError as exc:
            self._say(f"The embedding model could not be loaded again: {exc}")
        raise EmbeddingStartError(CRASHED)

    def _receive(self, deadline_s: Optional[float]) -> object:
        """The child's next record, or None when it dies (or stays silent past `deadline_s`)."""
        assert self._conn is not None and self._process is not None
        waited = 0.0
        while (deadline_s is None or waited < deadline_s) and not self._closing.is_set():
            try:
                if self._conn.poll(POLL_S):
                    return self._conn.recv()
            except (EOFError, OSError):
                return None
            if not self._process.is_alive():
                return None
            waited += POLL_S
        return None

    def _stop_process(self) -> None:
        process, conn = self._process, self._conn
        self._process = self._conn = None
        if conn is not None:
            try:
                conn.send(StopEmbedder())
            except (OSError, ValueError):
                pass
        if process is not None:
            process.join(CLOSE_WAIT_S)
            if process.is_alive():
                process.kill()
                process.join(CLOSE_WAIT_S)
        if conn is not None:
            conn.close()
