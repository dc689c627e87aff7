"""One way to work off the GUI thread (Anki's QueryOp): a plain function runs on a worker thread, and its result
or its error comes back to a callback on the GUI thread. Stamping is built in: a newer run of the same `lane`
supersedes older ones, whose work is skipped if it has not started and whose answers are dropped.

Each Background owns its threads (`threads`, 1 by default), started when work comes and ended after IDLE_EXIT_S
without any, or when its parent is destroyed; `keep_thread=True` keeps one thread for the Background's lifetime
instead, for work that holds a thread-bound resource such as an SQLite connection. They are daemon threads, so a
server that never answers cannot hold up quitting. After `close()` no callback runs.
GUI thread only, except the worker threads, which only run the functions and emit the private signal.
"""

from __future__ import annotations

import queue
import threading
import traceback
from dataclasses import dataclass
from typing import Any, Callable, Generic, Optional, TypeVar

from PySide6.QtCore import QObject, Signal

T = TypeVar("T")

IDLE_EXIT_S = 30.0


@dataclass(frozen=True)
class _Outcome:
    ticket: int
    lane: str
    value: Any
    error: Optional[BaseException]


@dataclass(frozen=True)
class _Callbacks(Generic[T]):
    on_done: Callable[[T], None]
    on_failed: Optional[Callable[[BaseException], None]]


class Background(QObject):
    """Runs functions on its worker thread(s) for the GUI thread; the newest run of each lane wins."""

    _sig_outcome = Signal(object)
    """An _Outcome, from a worker thread."""

    def __init__(self, name: str, parent: Optional[QObject] = None, threads: int = 1, keep_thread: bool = False):
        super().__init__(parent)
        self._name = name
        self._n_threads = 1 if keep_thread else max(1, threads)
        self._keep_thread = keep_thread
        self._threads_lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._queue: queue.SimpleQueue[Optional[Callable[[], None]]] = queue.SimpleQueue()
        self._next_ticket = 0
        self._latest: dict[str, int] = {}
        self._callbacks: dict[int, _Callbacks[Any]] = {}
        self._pending: set[int] = set()
        self._closed = False
        self._sig_outcome.connect(self._on_outcome)
        if parent is not None:
            # Its owner's end is its end. Otherwise a worker thread outlived a closed window by up to IDLE_EXIT_S,
            # holding a Background whose Qt object was gone, and one still working emitted on it.
            parent.destroyed.connect(lambda *_: self.close())

    def run(
        self,
        work: Callable[[], T],
        on_done: Callable[[T], None],
        on_failed: Optional[Callable[[BaseException], None]] = None,
        *,
        lane: str = "",
    ) -> int:
        """Run `work()` on a worker thread, then `on_done(result)` (or `on_failed(error)`) on the GUI thread unless
        a newer run of `lane` came first. An error without `on_failed` is printed, never lost. Returns the ticket."""
        if self._closed:
            return 0
        self._next_ticket += 1
        ticket = self._next_ticket
        self._latest[lane] = ticket
        self._callbacks[ticket] = _Callbacks(on_done, on_failed)
        self._pending.add(ticket)
        self._submit(lambda: self._work(ticket, lane, work))
        return ticket

    def _submit(self, job: Callable[[], None]) -> None:
        self._queue.put(job)
        with self._threads_lock:  # a thread leaving for idleness checks the queue under the same lock
            if len(self._threads) < self._n_threads and len(self._threads) < len(self._pending) + 1:
                thread = threading.Thread(target=self._serve, name=f"SpecChat {self._name}", daemon=True)
                self._threads.append(thread)
                thread.start()

    def _serve(self) -> None:  # a worker thread
        while True:
            try:
                job = self._queue.get(timeout=None if self._keep_thread else IDLE_EXIT_S)
            except queue.Empty:
                with self._threads_lock:
                    if self._queue.empty():
                        self._threads.remove(threading.current_thread())
                        return
                continue
            if job is None:
                return
            job()

    def supersede(self, lane: str = "") -> None:
        """Drop every answer of `lane` still to come (e.g. the question is no longer asked)."""
        self._next_ticket += 1
        self._latest[lane] = self._next_ticket

    def busy(self) -> bool:
        """Whether a run has not answered yet (stale runs included)."""
        return bool(self._pending)

    def close(self, wait_s: float = 0.0, last: Optional[Callable[[], None]] = None) -> bool:
        """No callback runs after this. `last` runs on a worker thread after the work queued (e.g. closing a
        connection that thread owns). Waits up to `wait_s` for the threads to end; True if they did."""
        if self._closed:
            with self._threads_lock:
                return not any(thread.is_alive() for thread in self._threads)
        self._closed = True
        self._callbacks.clear()
        if last is not None:
            self._submit(last)
        with self._threads_lock:
            threads = list(self._threads)
        for _ in threads:
            self._queue.put(None)
        for thread in threads:
            thread.join(wait_s)
        return not any(thread.is_alive() for thread in threads)

    def _work(self, ticket: int, lane: str, work: Callable[[], Any]) -> None:  # a worker thread
        if self._closed or self._latest.get(lane) != ticket:
            outcome = _Outcome(ticket, lane, None, None)  # superseded before it started: skipped
        else:
            try:
                outcome = _Outcome(ticket, lane, work(), None)
            except Exception as exc:  # it goes to on_failed, on the GUI thread
                outcome = _Outcome(ticket, lane, None, exc)
        if self._closed:
            return  # nobody listens, and the Qt object may be on its way out
        try:
            self._sig_outcome.emit(outcome)
        except RuntimeError:
            pass  # this object was deleted meanwhile (the window closed)

    def _on_outcome(self, outcome: _Outcome) -> None:
        self._pending.discard(outcome.ticket)
        callbacks = self._callbacks.pop(outcome.ticket, None)
        if callbacks is None or self._closed or self._latest.get(outcome.lane) != outcome.ticket:
            return
        del self._latest[outcome.lane]  # answered: anything older of this lane is stale without it
        if outcome.error is None:
            callbacks.on_done(outcome.value)
        elif callbacks.on_failed is not None:
            callbacks.on_failed(outcome.error)
        else:
            traceback.print_exception(type(outcome.error), outcome.error, outcome.error.__traceback__)
