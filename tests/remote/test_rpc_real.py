"""The target spread over two loopback ggml-rpc-server workers with the real Qwen pair: the same greedy tokens as
on this machine alone, and a worker that dies mid-reply is one clear error with the reply so far kept."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.targets import LocalModel
from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET
from tests.remote.llama_tools import free_port, start, stop, tool, wait_for_port
from tests.support.processes import cli_command

pytestmark = [pytest.mark.real_models, pytest.mark.slow]
CHAT = "Write a Python function that returns the sum of a list."


@pytest.fixture
def workers(tmp_path):
    binary = tool("ggml-rpc-server")
    processes, endpoints = [], []
    try:
        for i in range(2):
            port = free_port()
            log = tmp_path / f"rpc{i}.log"
            process = start([binary, "-H", "127.0.0.1", "-p", port, "-t", "1"], log)
            processes.append(process)
            wait_for_port(port, process, log, timeout_s=30)
            endpoints.append(f"127.0.0.1:{port}")
        yield endpoints, processes
    finally:
        for process in processes:
            stop(process)


def _generate(*extra: str) -> dict:
    cmd = cli_command(
        "generate",
        "--target",
        str(REAL_MODELS_DIR / REAL_TARGET),
        "--draft",
        str(REAL_MODELS_DIR / REAL_DRAFT),
        "--chat",
        CHAT,
        "--max-tokens",
        "32",
        "--threads",
        "1",
        "--draft-max",
        "4",
        "--json",
        *extra,
    )
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=dict(os.environ, GGML_NO_BACKTRACE="1"))
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def test_greedy_tokens_over_two_workers_equal_the_local_ones(workers):
    endpoints, _ = workers
    spread = _generate("--rpc", ",".join(endpoints))
    local = _generate()
    assert [t["id"] for t in spread["tokens"]] == [t["id"] for t in local["tokens"]]
    assert [t["source"] for t in spread["tokens"]] == [t["source"] for t in local["tokens"]]


def test_a_worker_killed_mid_reply_is_one_clear_error_and_the_reply_so_far_is_kept(workers, qtbot):
    from app.ui.engine_link.engine_process import EngineProcess

    endpoints, processes = workers
    engine = EngineProcess()
    streamed: list = []
    engine.sig_stream.connect(lambda events: streamed.extend(e for e in events if hasattr(e, "text")))
    try:
        load = LoadSettings(n_ctx=1024, n_threads=1, rpc_servers=tuple(endpoints))
        with qtbot.waitSignal(engine.sig_models_loaded, timeout=240000):
            engine.request_load(1, LocalModel(REAL_MODELS_DIR / REAL_TARGET), REAL_MODELS_DIR / REAL_DRAFT, load)
        with qtbot.waitSignal(engine.sig_generation_failed, timeout=240000) as failed:
            engine.request_generate(
                2,
                [{"role": "user", "content": "Tell a long story about a fox."}],
                GenerationConfig(max_tokens=400, draft_max=4, drafter="model"),
            )
            qtbot.waitUntil(lambda: len(streamed) >= 8, timeout=120000)
            stop(processes[1])
        (failure,) = failed.args
        request_id, message = failure.request_id, failure.message
        assert request_id == 2
        assert message.startswith("An RPC worker stopped answering") and "\n" not in message
        assert "".join(e.text for e in streamed).strip()  # what arrived before the worker died is kept
        qtbot.waitUntil(engine.is_running, timeout=20000)  # a fresh engine process, this one untouched
    finally:
        engine.stop()
