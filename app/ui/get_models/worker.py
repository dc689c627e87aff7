"""Run the Get-models panel's network work (search, listing, token check, downloads) on a thread pool.

Each task is a plain function; its result, failure or progress comes back to the GUI thread as a queued signal
stamped with the task's request id. The answer goes to the handlers the task was started with, unless they were
dropped: an answer to a question no longer asked (a superseded search) goes nowhere.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Optional

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from app.hub.errors import HubError

# A task gets a progress function it may call from its thread with any object (a DownloadProgress).
TaskFunction = Callable[[Callable[[object], None]], Any]
OnResult = Callable[[Any], None]
OnError = Callable[[HubError], None]


class TaskSignals(QObject):
    """Lives in the GUI thread; tasks emit from pool threads, so every connection is queued."""

    sig_progress = Signal(int, object)
    """A task reports progress: request id, the progress record."""
    sig_finished = Signal(int, object)
    """A task succeeded: request id, its result."""
    sig_failed = Signal(int, object)
    """A task failed: request id, the HubError (any other exception is wrapped in one)."""

    def __init__(self, parent: QObject):
        super().__init__(parent)
        # request id -> what to do with its answer; a dropped request (superseded search) has no entry
        self.handlers: dict[int, tuple[OnResult, OnError]] = {}
        self.sig_finished.connect(self._on_finished)
        self.sig_failed.connect(self._on_failed)

    def _on_finished(self, request_id: int, result: object) -> None:
        handlers = self.handlers.pop(request_id, None)
        if handlers is not None:
            handlers[0](result)

    def _on_failed(self, request_id: int, error: object) -> None:
        handlers = self.handlers.pop(request_id, None)
        if handlers is not None:
            handlers[1](error if isinstance(error, HubError) else HubError(str(error)))


class _Task(QRunnable):
    def __init__(self, request_id: int, function: TaskFunction, signals: TaskSignals):
        super().__init__()
        self.setAutoDelete(True)
        self.request_id = request_id
        self.function = function
        self.signals = signals

    def run(self) -> None:  # pool thread
        def progress(record: object) -> None:
            self.signals.sig_progress.emit(self.request_id, record)

        try:
            result = self.function(progress)
        except HubError as exc:
            self.signals.sig_failed.emit(self.request_id, exc)
        except Exception as exc:  # a bug must surface as a message, not kill the pool thread silently
            self.signals.sig_failed.emit(self.request_id, HubError(f"Unexpected error: {exc}"))
        else:
            self.signals.sig_finished.emit(self.request_id, result)


class TaskRunner:
    """Starts tasks on a private pool and waits for them on shutdown. GUI thread only."""

    def __init__(self, parent: QObject, max_threads: int = 3):
        self.pool = QThreadPool(parent)
        self.pool.setMaxThreadCount(max_threads)
        self.signals = TaskSignals(parent)
        self._next_id = 0
        self.cancel_events: list[threading.Event] = []

    def start(self, function: TaskFunction, on_result: OnResult, on_error: OnError) -> int:
        """Run `function` on the pool; its answer goes to `on_result` or `on_error` on the GUI thread."""
        self._next_id += 1
        self.signals.handlers[self._next_id] = (on_result, on_error)
        self.pool.start(_Task(self._next_id, function, self.signals))
        return self._next_id

    def drop(self, request_id: Optional[int]) -> None:
        """The answer to this request, when it comes, goes nowhere."""
        if request_id is not None:
            self.signals.handlers.pop(request_id, None)

    def new_cancel_event(self) -> threading.Event:
        event = threading.Event()
        self.cancel_events.append(event)
        return event

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel downloads (their partial files stay, to resume) and wait for every task to end."""
        cancel_all(self.cancel_events)
        return self.pool.waitForDone(timeout_ms)


def cancel_all(events: list[threading.Event]) -> None:
    """Module-level so it can run while the panel is being destroyed, without touching the panel."""
    for event in events:
        event.set()
