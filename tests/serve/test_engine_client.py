"""`serve`'s handle on its engine process (app.serve.engine.client) with the scripted engine of the window's tests:
a reply stuck where it never looks at its cancel flag is ended by replacing the engine process once its client has
gone, and the next request is answered by the fresh one."""

from __future__ import annotations

import pytest
import threading
import time

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent
from app.engine.targets import LocalModel
from app.serve.engine.client import STOP_GRACE_S, EngineClient
from app.serve.jobs import JobEnded, JobFailed, JobQueue, ServeJob
from app.serve.requests import ChatRequest
from tests.serve.api_fixtures import DEADLINE_S
from tests.ui.fake_engine import FakeEngineControl


def _job(records: list) -> ServeJob:
    request = ChatRequest(messages=({"role": "user", "content": "hello"},), config=GenerationConfig())
    return ServeJob(request, records.append)


@pytest.mark.slow
def test_a_stuck_reply_whose_client_left_is_ended_by_a_fresh_engine_process(tmp_path):
    control = FakeEngineControl(tmp_path / "fake")
    control.hang_in_chat = True
    target = tmp_path / "model.gguf"
    target.write_bytes(b"GGUF")
    said: list[str] = []
    engine = EngineClient(LocalModel(target), None, LoadSettings(n_ctx=512), engine_factory=control, say=said.append)
    queue = JobQueue(4)
    stuck_records: list = []
    next_records: list = []
    stuck, after = _job(stuck_records), _job(next_records)

    def client() -> None:  # the HTTP side: the first client leaves once its reply hangs, a second one asks
        deadline = time.monotonic() + DEADLINE_S
        while not control.requests and time.monotonic() < deadline:
            time.sleep(0.02)
        control.hang_in_chat = False
        stuck.cancel.set()
        queue.submit(after)

    engine.start()
    first_pid = engine.pid
    try:
        queue.submit(stuck)
        threading.Thread(target=client, daemon=True).start()
        deadline = time.monotonic() + DEADLINE_S + STOP_GRACE_S
        engine.work_off(
            queue,
            until=lambda: (
                (bool(next_records) and isinstance(next_records[-1], JobEnded)) or time.monotonic() > deadline
            ),
        )
    finally:
        engine.close()
    assert any(isinstance(r, FinishedEvent) for r in next_records), next_records
    assert isinstance(stuck_records[-1], JobEnded) and any(isinstance(r, JobFailed) for r in stuck_records)
    assert engine.pid is None and first_pid is not None
    assert any("did not stop in time after a client went away" in line for line in said), said
