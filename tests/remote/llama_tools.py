"""llama.cpp's reference tools for the tests (built by ../shared/tools/build-llama-reference.sh; absent: skip)."""

from __future__ import annotations

import os
import socket
import subprocess
import time
from pathlib import Path
from typing import Iterator, Optional

import pytest

from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET
from tests.support.ports import free_port  # noqa: F401 (the remote tests import it from here)

TOOLS_BIN = (
    Path(os.environ.get("SPECCHAT_LLAMA_REFERENCE") or Path.home() / ".cache" / "specchat-llama-reference") / "bin"
)
N_CTX = 2048


def tool(name: str) -> Path:
    """The tool's path; skips the test when it or the real Qwen pair is absent."""
    path = TOOLS_BIN / name
    if not path.is_file():
        pytest.skip(f"{name} is not built (../shared/tools/build-llama-reference.sh)")
    for model in (REAL_TARGET, REAL_DRAFT):
        if not (REAL_MODELS_DIR / model).is_file():
            pytest.skip(f"real model {model} is absent")
    return path


def start(args: list, log: Path) -> subprocess.Popen:
    env = dict(os.environ, LD_LIBRARY_PATH=str(TOOLS_BIN))
    out = open(log, "wb")
    return subprocess.Popen([str(a) for a in args], stdout=out, stderr=subprocess.STDOUT, env=env)


def wait_for_port(
    port: int, process: subprocess.Popen, log: Path, timeout_s: float = 180.0, http_health: bool = False
) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"the tool exited: {log.read_text(errors='replace')[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                if not http_health:
                    return
            import urllib.request

            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.3)
    raise RuntimeError("the tool did not start listening in time")


def stop(process: Optional[subprocess.Popen]) -> None:
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def serve_llama_server(tmp_path_factory) -> Iterator[str]:
    """llama-server on 127.0.0.1 with the real Qwen pair speculating (k=4, greedy); yields its base URL."""
    binary = tool("llama-server")
    port = free_port()
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    process = start(
        [
            binary,
            "-m",
            REAL_MODELS_DIR / REAL_TARGET,
            "-md",
            REAL_MODELS_DIR / REAL_DRAFT,
            "--spec-type",
            "draft-simple",
            "--spec-draft-n-max",
            "4",
            "--host",
            "127.0.0.1",
            "--port",
            port,
            "-t",
            "2",
            "--temp",
            "0",
            "-c",
            N_CTX,
            "-np",
            "1",
        ],
        log,
    )
    try:
        wait_for_port(port, process, log, http_health=True)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)
