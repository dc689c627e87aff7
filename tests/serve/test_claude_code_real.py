"""Claude Code itself (`claude -p`) against `specchat-cli serve` with the real Qwen2.5-Coder 1.5B: a small edit
task in a throwaway git repository, offline, ends with the client's clean exit.

Claude Code is installed as people install it, from npm (tests/support/agent_clients.py); skipped only where npm
cannot install it. Claude Code's prompt is some 20,000 tokens, so on a
slow machine the first request reads its prompt for minutes: the stream's pings keep the client waiting."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.serve.api_fixtures import serving_process
from tests.support.agent_clients import CLAUDE_CODE, installed

KEY = "sk-test-claude-code"
SESSION_S = 15 * 60
# With two tools Claude Code's request is about 10 KB of text (with all its tools, about 80 KB).
CONTEXT = 32768
MAX_TOKENS = 512


@pytest.mark.slow
def test_claude_code_ends_an_edit_session_cleanly(real_models, tmp_path):
    claude = installed(CLAUDE_CODE)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, timeout=60)
    with serving_process(
        "--target",
        real_models["target"],
        "--ctx",
        CONTEXT,
        "--max-tokens",
        MAX_TOKENS,
        "--api-key",
        KEY,
        threads=os.cpu_count() or 1,
    ) as serve:
        env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(tmp_path / "home"),
            "ANTHROPIC_BASE_URL": serve.url,
            "ANTHROPIC_API_KEY": KEY,
            "API_TIMEOUT_MS": str(SESSION_S * 1000),
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        done = subprocess.run(
            [
                claude,
                "-p",
                "In calc.py, add() subtracts. Fix it so that it adds.",
                "--permission-mode",
                "acceptEdits",
                "--tools",
                "Read,Edit",  # the two the task needs: all of Claude Code's tools would triple the prompt
            ],
            cwd=repo,
            env=env,
            capture_output=True,
            text=True,
            timeout=SESSION_S,
        )
        served = [serve.lines.get_nowait() for _ in range(serve.lines.qsize())]
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-2000:], served[-20:])
