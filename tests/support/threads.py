"""The threads a test leaves running: the ones app/ starts are named "SpecChat ..."; each gets a deadline to end."""

from __future__ import annotations

import threading
import time

import pytest

THREAD_PREFIX = "SpecChat"  # every thread the window's process starts is named so (app/ui, app/serve)
THREAD_END_S = 5.0  # how long a closed thread may take to notice its end


def leaked_threads(before: set[threading.Thread], deadline_s: float = THREAD_END_S) -> list[threading.Thread]:
    """The SpecChat threads started since `before` that are still alive once each had until the deadline to end."""
    deadline = time.monotonic() + deadline_s
    started = [t for t in threading.enumerate() if t not in before and t.name.startswith(THREAD_PREFIX)]
    for thread in started:
        thread.join(max(0.0, deadline - time.monotonic()))
    return [t for t in started if t.is_alive()]


@pytest.fixture(autouse=True)
def no_thread_leaks(qapp):
    """Fail a test that leaves a SpecChat thread running (napari's dangling_qthreads, for the threads app/ starts:
    Background's workers, the reply saver, the engine's reader, the API server, the MCP tool host).

    Autouse and after qapp, so its check runs after pytest-qt has closed the test's widgets.
    """
    before = set(threading.enumerate())
    yield
    leaked = leaked_threads(before, THREAD_END_S)
    if leaked:
        pytest.fail(f"test left {len(leaked)} thread(s) running: {', '.join(t.name for t in leaked)}")
