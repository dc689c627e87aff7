"""The terminal's permission question for a tool call cannot be spoofed by what a tool server names.

Issue 44, class 3. `specchat-cli generate --mcp` (the real CLI, a
subprocess asking on a real terminal) with a hostile tool server whose tool name, server name, description,
result and stderr hold escape sequences, CR, backspace, a bidi override and zero-width characters: nothing of them
reaches the terminal as a control sequence, and the question shows the real name, escaped so that it can be seen."""

from __future__ import annotations

import json
import os
import pty
import sys
from pathlib import Path

import pytest

from app.common.text import printable
from app.mcp.tool_host import _unique_name
from tests.remote.fake_openai_server import FakeServer, Script, content_chunk
from tests.tool_servers.hostile_server import HOSTILE
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 120
SERVER_NAME = "notes\x1b]0;pwned\x07\u202e"  # the mcp.json entry's own name is shown too
# What a terminal would obey or what reorders or hides text: none of it may be printed.
OBEYED = ("\x1b", "\x9b", "\x07", "\r", "\x08", "\u202e", "\u200b")


def _call_chunks(name: str) -> list[dict]:
    frame = {
        "tool_calls": [
            {"index": 0, "id": "c1", "type": "function", "function": {"name": name, "arguments": '{"name": "monday"}'}}
        ]
    }
    return [
        content_chunk(""),
        {"choices": [{"index": 0, "delta": frame, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]},
    ]


@pytest.mark.slow
def test_the_question_shows_the_real_name_and_no_escape_reaches_the_terminal(tmp_path):
    module = [sys.executable, "-m", "tests.tool_servers.hostile_server"]
    servers = {
        SERVER_NAME: {"command": module[0], "args": module[1:], "cwd": str(ROOT)},
        "dying": {"command": module[0], "args": [*module[1:], "--die-at-start"], "cwd": str(ROOT)},
    }
    mcp = tmp_path / "mcp.json"
    mcp.write_text(json.dumps({"mcpServers": servers}))
    model_name = _unique_name(SERVER_NAME, HOSTILE, set())  # the name the model is offered
    env = {k: v for k, v in os.environ.items() if k != "SPECCHAT_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    master, terminal = pty.openpty()  # the question is asked only where stdin is a terminal
    try:
        os.write(master, b"y\n")  # the person allows the call once
        with FakeServer(Script(models=[("fake-model", "vllm")], chunks=_call_chunks(model_name))) as server:
            done = run_cli(
                "generate",
                "--server",
                server.url,
                "--model",
                "fake-model",
                "--chat",
                "read my note",
                "--mcp",
                str(mcp),
                "--max-steps",
                "2",
                stdin=terminal,
                timeout=DEADLINE_S,
                env=env,
            )
    finally:
        os.close(master)
        os.close(terminal)
    out = done.stdout + done.stderr
    assert "Traceback" not in out, done.stderr
    assert not [c for c in OBEYED if c in out], done.stderr
    # The question names exactly the tool that runs and its server, every hidden character shown.
    shown = printable(HOSTILE, name=True)
    assert shown.startswith("\\x1b[2J\\x1b]0;pwned\\x07\\x0dread\\x08\\u202eeton\\u200b_")
    assert f'The model wants to run {shown} (server "{printable(SERVER_NAME, name=True)}")' in done.stderr
    assert f"[{shown} returned in" in done.stderr  # it ran, once allowed; its result shown escaped
    assert "done\\x1b]0;pwned again\\x07" in done.stderr
    # The dying server's stderr line is reported, escaped.
    assert 'Tool server "dying" stopped: read\\x08\\u202eeton' in done.stderr
