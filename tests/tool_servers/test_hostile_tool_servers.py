"""A tool server that floods stdout or never answers costs the CLI a sentence, and leaves no process behind.

Against the real CLI (`generate --mcp`) and hostile stdio servers the tests start (issue 44, classes 7 and 8;
tests/tool_servers/unruly_server.py): a server that floods stdout with lines that are not JSON-RPC costs a few
lines on stderr, not a traceback each; a server that never answers `initialize` is given up on with a sentence, and
its whole process tree (a child that ignores SIGTERM included) is gone once `generate` exits or the host closes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.mcp.records import ServerSpec
from app.mcp.server_log import FIRST_LINES
from app.mcp.tool_host import CONNECT_TIMEOUT_S, ToolHost
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 300
HOSTILE = [sys.executable, "-m", "tests.tool_servers.unruly_server"]


def _generate(*args) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return run_cli("generate", *args, "--threads", "1", errors="replace", timeout=DEADLINE_S, env=env)


def _mcp_json(tmp_path: Path, servers: dict) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


def _server(*args: str) -> dict:
    return {"command": HOSTILE[0], "args": [*HOSTILE[1:], *args], "cwd": str(ROOT)}


def _running(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting for its parent to reap it has ended)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _all_end(pids: list[int], within_s: float = 15.0) -> bool:
    deadline = time.monotonic() + within_s
    while any(_running(pid) for pid in pids):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _kill(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, 9)
        except OSError:
            pass


def _pids(pid_file: Path, within_s: float = 60.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while not pid_file.exists():
        assert time.monotonic() < deadline, "the hostile server never started"
        time.sleep(0.1)
    return [int(pid) for pid in pid_file.read_text().split()]


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finding a server's process group needs /proc")
def test_a_server_that_never_answers_is_given_up_on_and_its_whole_tree_ends(tiny_models, tmp_path):
    pid_file = tmp_path / "pids"
    path = _mcp_json(tmp_path, {"mute": _server("silent", str(pid_file))})
    done = _generate("--target", tiny_models.target, "--chat", "hi", "--max-tokens", 2, "--mcp", path)
    pids = _pids(pid_file, 0)
    try:
        assert done.returncode == 1 and "Traceback" not in done.stderr
        assert f'[Tool server "mute" did not answer within {CONNECT_TIMEOUT_S:.0f} s.]' in done.stderr
        assert "still starting" not in done.stderr
        assert _all_end(pids), "the server or its child outlived generate"
    finally:
        _kill(pids)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="finding a server's process group needs /proc")
def test_closing_while_a_server_starts_ends_its_whole_tree(tmp_path):
    pid_file = tmp_path / "pids"
    host = ToolHost(
        [ServerSpec("mute", command=HOSTILE[0], args=(*HOSTILE[1:], "silent", str(pid_file)), cwd=str(ROOT))],
        connect_timeout_s=DEADLINE_S,
    )
    host.start()
    pids = _pids(pid_file)
    try:
        assert host.states()[0].phase == "starting"
        host.close()
        assert host.states()[0].phase == "stopped"
        assert _all_end(pids), "the server or its child outlived the host"
    finally:
        _kill(pids)


@pytest.mark.slow
def test_a_server_flooding_stdout_costs_a_few_lines_and_still_serves(tiny_models, tmp_path):
    path = _mcp_json(tmp_path, {"flood": _server("flood", "20000")})
    done = _generate("--target", tiny_models.target, "--chat", "hi", "--max-tokens", 2, "--mcp", path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "Traceback" not in done.stderr and len(done.stderr) < 4000, done.stderr[-3000:]
    assert done.stderr.count("Failed to parse JSONRPC message from server") == FIRST_LINES
    left_out = sum(
        int(line.split("… ")[1].split()[0].replace(",", ""))
        for line in done.stderr.splitlines()
        if "more log lines like these were left out" in line
    )
    assert left_out == 20000 - FIRST_LINES
    assert '[tool server "flood": 6 tools]' in done.stderr  # after its flood it serves as any other


@pytest.mark.slow
def test_ten_thousand_servers_start_at_most_sixty_four_with_a_sentence(tiny_models, tmp_path):
    from app.mcp.servers_file import MAX_SERVERS

    missing = "specchat-no-such-server"  # fails at once: what is measured is the file, not the servers
    path = _mcp_json(tmp_path, {f"s{i}": {"command": missing} for i in range(10_000)})
    done = _generate("--target", tiny_models.target, "--chat", "hi", "--max-tokens", 2, "--mcp", path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert f"lists 9,936 more tool servers that were not loaded: at most {MAX_SERVERS} are started" in done.stderr
    assert done.stderr.count("was not found") == MAX_SERVERS
