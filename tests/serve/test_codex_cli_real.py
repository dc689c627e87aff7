"""Codex CLI itself (`codex exec`, from npm's @openai/codex) on a small edit in a throwaway git repository, against
`specchat-cli serve` with the real Qwen2.5-Coder 1.5B, offline: the client must finish cleanly (exit 0, no
stream error, no retry) within CODEX_DEADLINE_S. Installed as people install it, from npm
(tests/support/agent_clients.py); skipped only where npm cannot install it."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.serve.api_fixtures import client, serving_process
from tests.support.agent_clients import CODEX, installed

pytestmark = [pytest.mark.slow, pytest.mark.real_models]

CODEX_DEADLINE_S = 15 * 60
CONFIG = """model = "{model}"
model_provider = "specchat"
model_catalog_json = "{catalog}"
approval_policy = "never"
sandbox_mode = "workspace-write"
web_search = "disabled"

[features]
multi_agent = false
goals = false

[model_providers.specchat]
name = "SpecChat"
base_url = "{url}/v1"
wire_api = "responses"
env_key = "SPECCHAT_API_KEY"
stream_idle_timeout_ms = 900000
stream_max_retries = 0
request_max_retries = 0
"""


def test_codex_exec_finishes_an_edit_cleanly(real_models, tmp_path):
    codex = installed(CODEX)
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "greet.py").write_text('def greet():\n    return "hello"\n')
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "start"], check=True)
    home = tmp_path / "codex-home"
    home.mkdir()
    with serving_process("--target", real_models["target"], "--draft", real_models["draft"], "--ctx", 32768) as served:
        with client() as http:
            listed = http.get(f"{served.url}/v1/models")
        (home / "specchat-models.json").write_text(listed.text)
        model = listed.json()["data"][0]["id"]
        config = CONFIG.format(model=model, catalog=home / "specchat-models.json", url=served.url)
        (home / "config.toml").write_text(config)
        env = {**os.environ, "CODEX_HOME": str(home), "SPECCHAT_API_KEY": "none", "NO_COLOR": "1"}
        ran = subprocess.run(
            [codex, "exec", "--skip-git-repo-check", "-C", str(repo), "In greet.py, return goodbye instead of hello."],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=CODEX_DEADLINE_S,
        )
    said = ran.stdout + ran.stderr
    # Whether the 1.5B made the edit is the model's skill, not the API's: shown, not asserted.
    print(f"codex said: {ran.stdout[-1500:]}\ngreet.py now: {(repo / 'greet.py').read_text()!r}")
    assert ran.returncode == 0, said[-3000:]
    assert "stream disconnected" not in said and "Reconnecting" not in said, said[-3000:]
    assert "Model metadata" not in said, said[-3000:]  # the catalog from /v1/models was read
