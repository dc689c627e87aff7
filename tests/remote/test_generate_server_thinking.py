"""`generate --server` with a thinking model shows its reasoning apart from its answer, against SpecChat's own
`serve` and against llama-server run with `--reasoning-format deepseek`: the real Qwen2.5-Coder 1.5B, told to think
by one example, opens its replies with <think>."""

from __future__ import annotations

import json
import urllib.request

import pytest

from tests.conftest import REAL_MODELS_DIR, REAL_TARGET
from tests.remote.llama_tools import free_port, start, stop, tool, wait_for_port
from tests.serve.test_reasoning_openai_sdk import _serving
from tests.engine.reasoning.test_reasoning_real import THINK_BY_EXAMPLE
from tests.support.processes import run_cli

pytestmark = [pytest.mark.real_models, pytest.mark.slow]


def _generate_from(url: str) -> dict:
    with urllib.request.urlopen(f"{url}/v1/models", timeout=30) as response:
        model = json.loads(response.read())["data"][0]["id"]
    done = run_cli(
        "generate",
        "--server",
        url,
        "--model",
        model,
        "--system",
        THINK_BY_EXAMPLE,
        "--chat",
        "Is 221 a prime number?",
        "--max-tokens",
        "160",
        "--no-history",
        "--json",
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _assert_apart(out: dict) -> None:
    assert "221" in out["reasoning"]["text"]
    assert out["text"].strip() and "<think>" not in out["text"] and "</think>" not in out["text"]
    assert {t["part"] for t in out["tokens"]} == {"reasoning", "answer"}


def test_generate_server_against_serve_shows_the_reasoning_apart(real_models):
    with _serving(real_models["target"]) as client:
        _assert_apart(_generate_from(str(client.base_url).removesuffix("/v1/").removesuffix("/v1")))


def test_generate_server_against_llama_server_deepseek_shows_the_reasoning_apart(tmp_path):
    binary = tool("llama-server")
    port = free_port()
    log = tmp_path / "server.log"
    process = start(
        [
            binary,
            "-m",
            REAL_MODELS_DIR / REAL_TARGET,
            "--host",
            "127.0.0.1",
            "--port",
            port,
            "-t",
            "2",
            "--temp",
            "0",
            "-c",
            "2048",
            "-np",
            "1",
            "--jinja",
            "--reasoning-format",
            "deepseek",
        ],
        log,
    )
    try:
        wait_for_port(port, process, log, http_health=True)
        _assert_apart(_generate_from(f"http://127.0.0.1:{port}"))
    finally:
        stop(process)
