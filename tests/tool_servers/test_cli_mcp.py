"""`specchat-cli generate --mcp mcp.json`: the model calls a real MCP server's tools (tests/tool_servers/tool_server.py),
each call allowed first, and answers from the results."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.cli.tool_loop import REFUSED, Permissions, run_call
from app.mcp.records import ServerSpec, find_tool
from app.mcp.tool_host import ToolHost
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]
SERVER = {"command": sys.executable, "args": ["-m", "tests.tool_servers.tool_server"], "cwd": str(ROOT)}


def _generate(*args, stdin: str = "") -> subprocess.CompletedProcess:
    return run_cli("generate", *args, "--threads", "1", timeout=600, input=stdin)


def _mcp_json(tmp_path: Path, servers: dict) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(json.dumps({"mcpServers": servers}))
    return path


@pytest.fixture
def notes():
    host = ToolHost(
        [ServerSpec(name="notes", command=sys.executable, args=("-m", "tests.tool_servers.tool_server"), cwd=str(ROOT))]
    )
    host.start()
    assert host.wait_started(60)
    yield host
    host.close()


@pytest.mark.slow
def test_a_call_runs_only_once_the_person_says_yes(notes):
    asked: list[str] = []
    answers = iter(["n", "y", "a"])
    permissions = Permissions(ask=lambda question: (asked.append(question), next(answers))[1])
    err = io.StringIO()
    refused = run_call(notes, "read_note", '{"name": "monday"}', permissions, err)
    assert (refused.text, refused.is_error) == (REFUSED, True)
    assert 'read_note (server "notes") with {"name": "monday"}' in asked[0]
    assert run_call(notes, "read_note", '{"name": "monday"}', permissions, err).text == "Note monday: buy milk"
    assert run_call(notes, "add", '{"a": 1, "b": 2}', permissions, err).text == "3"  # "a": always add
    assert run_call(notes, "add", '{"a": 2, "b": 2}', permissions, err).text == "4"
    assert len(asked) == 3  # the fourth call was never asked about
    assert "[read_note returned in" in err.getvalue()


def test_without_a_terminal_calls_are_refused_unless_allowed(notes):
    err = io.StringIO()
    assert run_call(notes, "add", '{"a": 1, "b": 2}', Permissions(ask=None), err).text == REFUSED
    assert "--allow-tools" in err.getvalue()
    assert run_call(notes, "add", '{"a": 1, "b": 2}', Permissions(allow_all=True), err).text == "3"


@pytest.mark.parametrize(
    "extra,message",
    [
        ((), None),
        (("--tools", "x.json"), "leave out --tools"),
        (("--max-steps", "0"), "--max-steps must be from 1 to 64"),
    ],
)
def test_mcp_options_are_checked_before_anything_loads(tiny_models, tmp_path, extra, message):
    path = _mcp_json(tmp_path, {"broken": {"args": []}})
    done = _generate("--target", tiny_models.target, "--chat", "hi", "--mcp", path, *extra)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert (message or 'Tool server "broken" has no "command"') in done.stderr


def test_mcp_needs_a_chat_and_allow_tools_needs_mcp(tiny_models, tmp_path):
    path = _mcp_json(tmp_path, {"notes": SERVER})
    assert "--mcp needs --chat" in _generate("--target", tiny_models.target, "--prompt", "hi", "--mcp", path).stderr
    assert "go with --mcp" in _generate("--target", tiny_models.target, "--chat", "hi", "--allow-tools").stderr


@pytest.mark.slow
def test_when_no_server_starts_the_run_says_why_and_stops(tiny_models, tmp_path):
    path = _mcp_json(tmp_path, {"db": {**SERVER, "args": [*SERVER["args"], "--die-at-start"]}})
    done = _generate("--target", tiny_models.target, "--chat", "hi", "--mcp", path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "cannot open the database (permission denied)" in done.stderr
    assert "no tool server listed in the --mcp file could be used" in done.stderr


@pytest.mark.real_models
def test_the_real_model_calls_a_tool_and_answers_from_its_result(real_models, tmp_path):
    path = _mcp_json(tmp_path, {"notes": SERVER})
    args = (
        "--target",
        real_models["target"],
        "--chat",
        "What does my note named monday say?",
        "--system",
        "You are a helpful assistant. When a tool response comes, answer the user's question from it.",
        "--max-tokens",
        120,
        "--no-history",
        "--mcp",
        path,
    )
    allowed = _generate(*args, "--allow-tools", "--json")
    assert allowed.returncode == 0, allowed.stderr
    out = json.loads(allowed.stdout)
    call = out["steps"][0]["tool_calls"][0]["function"]
    assert (call["name"], json.loads(call["arguments"])) == ("read_note", {"name": "monday"})
    assert out["steps"][0]["results"][0]["text"] == "Note monday: buy milk"
    assert "milk" in out["text"].lower() and out["tool_calls"] == []
    assert len(out["steps"]) == 1  # read once: a repeated call is answered from the result the model has
    # Without a terminal and without --allow-tools the call is refused, and the model is told so.
    refused = _generate(*args)
    assert refused.returncode == 0, refused.stderr
    assert "[tool call read_note refused: no terminal to ask" in refused.stderr
    assert "buy milk" not in refused.stdout


@pytest.fixture
def two_servers():
    """Servers "first" and "second" with the same tools: "read_note" is first's, "second_read_note" second's."""
    specs = [
        ServerSpec(name=name, command=sys.executable, args=("-m", "tests.tool_servers.tool_server"), cwd=str(ROOT))
        for name in ("first", "second")
    ]
    host = ToolHost(specs)
    host.start()
    assert host.wait_started(60)
    yield host
    host.close()


def _crash_first(host: ToolHost) -> None:
    """The first server dies; its tools' names go to the second's tools of the same name."""
    host.call("crash", {}).result(timeout=60)
    deadline = time.monotonic() + 60
    while host.states()[0].phase != "failed":
        assert time.monotonic() < deadline, host.states()
        time.sleep(0.05)
    assert find_tool(host.tools(), "read_note").server == "second"


def test_always_is_bound_to_the_tool_not_its_name(two_servers):
    """Issue 44 class 4: "always" for first's read_note never lets second's read_note run unasked when it takes
    the name (its server failed)."""
    asked: list[str] = []
    answers = iter(["a", "y"])
    permissions = Permissions(ask=lambda question: (asked.append(question), next(answers))[1])
    err = io.StringIO()
    assert run_call(two_servers, "read_note", '{"name": "a"}', permissions, err).text == "Note a: buy milk"
    assert run_call(two_servers, "read_note", '{"name": "b"}', permissions, err).text == "Note b: buy milk"
    assert len(asked) == 1 and '(server "first")' in asked[0]
    _crash_first(two_servers)
    assert run_call(two_servers, "read_note", '{"name": "c"}', permissions, err).text == "Note c: buy milk"
    assert len(asked) == 2 and '(server "second")' in asked[1]  # asked again: another server's tool


def test_the_call_that_runs_is_the_one_that_was_approved(two_servers):
    """The tool is resolved once, when the person is asked: when its server dies while the question is on the
    screen, Yes runs nothing (the other server's tool of that name is not run in its place)."""

    def ask(question: str) -> str:
        _crash_first(two_servers)
        return "y"

    result = run_call(two_servers, "read_note", '{"name": "a"}', Permissions(ask=ask), io.StringIO())
    assert result.is_error and "changed or went away after it was allowed" in result.text
