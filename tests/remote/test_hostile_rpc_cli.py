"""`specchat-cli generate --rpc` (the real CLI, a subprocess) and the engine process against hostile RPC workers on
127.0.0.1: a peer that closes, sends garbage, speaks another version, greets and then answers garbage, or never
answers gets one sentence and exit status 1 (never SIGABRT, never a hang); Ctrl-C while it is checked is a clean
exit; and the window's load (the engine process) gets the same sentence instead of waiting forever."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from app.engine.config import LoadSettings
from app.engine.host.wire import LoadFailed, LoadModels
from app.engine.targets import LocalModel
from tests.support.processes import cli_command, interrupt
from tests.remote.fake_rpc_peer import MODES, FakeRpcPeer, client_version
from tests.remote.test_remote_worker_and_cli import _serve

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 180  # far above the check's own timeouts: a run past it is a hang, and the test fails
EXPECTED = {
    "close": "closed the connection without answering llama.cpp's greeting",
    "garbage": "answered llama.cpp's greeting with something that is not a ggml-rpc reply",
    "silent": "accepted the connection but did not answer within 5 s",
    "old_version": "answered in a way llama.cpp cannot read, which would have stopped SpecChat",
    "hello_then_garbage": "answered in a way llama.cpp cannot read, which would have stopped SpecChat",
}


def _generate_command(target: Path, endpoint: str) -> list[str]:
    return cli_command(
        "generate",
        "--target",
        str(target),
        "--prompt",
        "a",
        "--max-tokens",
        "4",
        "--rpc",
        endpoint,
    )


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), GGML_NO_BACKTRACE="1")


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_a_hostile_worker_is_one_sentence_and_exit_1(mode, tiny_models):
    if mode in ("old_version", "hello_then_garbage") and client_version() is None:
        pytest.fail("llama-cpp-python's ggml-rpc.h is missing: the RPC protocol version is unknown")
    with FakeRpcPeer(mode) as peer:
        done = subprocess.run(
            _generate_command(tiny_models.target, peer.endpoint),
            capture_output=True,
            text=True,
            timeout=DEADLINE_S,
            env=_env(),
            cwd=ROOT,
        )
    assert done.returncode == 1, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"error: The RPC worker at {peer.endpoint}") and EXPECTED[mode] in last
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr


def test_ctrl_c_while_a_silent_worker_is_checked_is_a_clean_exit(tiny_models):
    with FakeRpcPeer("silent") as peer:
        process = subprocess.Popen(
            _generate_command(tiny_models.target, peer.endpoint),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(),
            cwd=ROOT,
        )
        try:
            deadline = time.monotonic() + DEADLINE_S
            while peer.connections == 0 and time.monotonic() < deadline and process.poll() is None:
                time.sleep(0.05)
            assert peer.connections >= 1  # the check is waiting on the worker
        finally:
            err = interrupt(process, DEADLINE_S)
    assert process.returncode == 130, err.decode()[-2000:]
    assert err.decode().strip().splitlines()[-1] == "interrupted" and b"Traceback" not in err


@pytest.mark.slow
def test_the_engine_process_load_with_a_silent_worker_fails_with_a_sentence(tiny_models):
    with FakeRpcPeer("silent") as peer:
        sent = _serve(
            [
                LoadModels(
                    1,
                    LocalModel(tiny_models.target),
                    None,
                    LoadSettings(n_ctx=256, n_threads=1, rpc_servers=(peer.endpoint,)),
                )
            ]
        )
    failed = next(m for m in sent if isinstance(m, LoadFailed))
    assert f"The RPC worker at {peer.endpoint} accepted the connection but did not answer" in failed.message
