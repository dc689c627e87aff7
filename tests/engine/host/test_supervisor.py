"""The one supervisor of the engine process (app.engine.host.supervisor), with the window's scripted engine in the
child: a child that dies mid-job is put in words with its last error line and a fresh one works; a child that does
not hear the polite end is killed within its deadline; only deaths the supervisor did not bring are reported, and
its threads end with it."""

from __future__ import annotations

import os
import queue
import signal
import threading
import time
from pathlib import Path

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.host.supervisor import ChildGone, ChildSupervisor
from app.engine.host.wire import GenerateReply, LoadFailed, LoadModels, ModelsLoaded, Reply
from app.engine.targets import LocalModel
from tests.support.threads import leaked_threads
from tests.ui.fake_engine import FakeEngineControl

DEADLINE_S = 60.0  # a spawned child imports the engine: seconds on a busy 2-core machine


def _model(folder: Path, name: str) -> LocalModel:
    path = folder / name
    path.write_bytes(b"GGUF")
    return LocalModel(path)


def _load(child: ChildSupervisor, request_id: int, target: LocalModel) -> Reply:
    """Send a load and return its answer (ModelsLoaded or LoadFailed); ChildGone when the child died."""
    child.send(LoadModels(request_id, target, None, LoadSettings(n_ctx=512)))
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        reply = child.receive(timeout=0.5)
        if isinstance(reply, (ModelsLoaded, LoadFailed)):
            return reply
    raise AssertionError("the load was not answered in time")


@pytest.mark.slow
def test_a_child_that_dies_mid_job_is_told_with_its_last_words_and_a_fresh_one_works(tmp_path):
    control = FakeEngineControl(tmp_path / "fake")
    control.crash_on_load = "broken.gguf"
    child = ChildSupervisor("supervised", "SpecChat test engine", engine_factory=control)
    child.start()
    first_pid = child.pid
    try:
        assert isinstance(_load(child, 1, _model(tmp_path, "fine.gguf")), ModelsLoaded)
        child.mark_log()
        with pytest.raises(ChildGone):
            _load(child, 2, _model(tmp_path, "broken.gguf"))
        end = child.restart(wait_s=1.0)
        assert end.how == "killed by SIGABRT" and not end.build_fault
        assert "GGML_ASSERT(id_to_token.size() == token_to_id.size()) failed" in end.detail
        assert child.pid != first_pid and child.is_alive()
        assert isinstance(_load(child, 3, _model(tmp_path, "fine.gguf")), ModelsLoaded)
    finally:
        assert child.close(wait_s=5.0)
    assert not child.has_child and not Path(child.log_path).exists()


@pytest.mark.slow
def test_a_child_that_does_not_hear_the_polite_end_is_killed(tmp_path):
    control = FakeEngineControl(tmp_path / "fake")
    control.hang_in_chat = True  # stuck where it never reads its pipe nor its stop flags
    child = ChildSupervisor("supervised", "SpecChat test engine", engine_factory=control)
    child.start()
    pid = child.pid
    assert pid is not None
    assert isinstance(_load(child, 1, _model(tmp_path, "fine.gguf")), ModelsLoaded)
    child.send(GenerateReply(2, ({"role": "user", "content": "hello"},), GenerationConfig()))
    deadline = time.monotonic() + DEADLINE_S
    while not control.requests and time.monotonic() < deadline:
        time.sleep(0.05)
    assert control.requests, "the reply never started"
    assert not child.end(wait_s=0.5)  # it had to be killed: the call came back rather than waiting on it
    assert not child.is_alive() and not child.has_child
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped, not left as a zombie


@pytest.mark.slow
def test_only_a_death_the_supervisor_did_not_bring_is_reported(tmp_path):
    before = set(threading.enumerate())
    replies: queue.Queue = queue.Queue()
    gone: queue.Queue = queue.Queue()
    child = ChildSupervisor(
        "supervised",
        "SpecChat test engine",
        engine_factory=FakeEngineControl(tmp_path / "fake"),
        on_reply=lambda incarnation, reply: replies.put((incarnation, reply)),
        on_gone=gone.put,
    )
    child.start()
    try:
        replies.get(timeout=DEADLINE_S)  # WorkerReady: it reads requests
        pid = child.pid
        assert pid is not None
        os.kill(pid, signal.SIGKILL)  # as the system does when memory runs out
        assert gone.get(timeout=DEADLINE_S) == 1
        end = child.restart(wait_s=1.0)
        assert end.how == "killed by SIGKILL" and end.detail == ""
        assert replies.get(timeout=DEADLINE_S)[0] == 2  # the fresh child reads requests
    finally:
        assert child.close(wait_s=5.0)
    # The second child exited when asked and its pipe closed; close() waited for the reader thread that saw it
    # close, and nobody was told.
    assert gone.empty()
    assert leaked_threads(before) == []  # its reader, sender and echo threads ended with it
