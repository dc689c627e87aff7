"""Claude Code's recorded request counted by `specchat-cli serve` with the real Qwen2.5-Coder 1.5B, whose template
writes the tools into the prompt: the count Claude Code reads (count_tokens, usage.input_tokens) holds them."""

from __future__ import annotations

import pytest

from app.bench.agent_replay import load_session
from app.bench.agents import DEFAULT_SESSION
from tests.serve.api_fixtures import client, serving_process


@pytest.mark.slow
def test_claude_codes_tools_are_counted_in_its_prompt(real_models):
    body = {k: v for k, v in load_session(DEFAULT_SESSION)[0].body.items() if k != "stream"}
    assert body["tools"]
    with serving_process("--target", real_models["target"], "--ctx", "8192") as served, client() as http:
        url = f"{served.url}/v1/messages/count_tokens"
        with_tools = http.post(url, json=body).json()["input_tokens"]
        without = http.post(url, json={k: v for k, v in body.items() if k != "tools"}).json()["input_tokens"]
    # Read, Edit and Write take some hundreds of tokens of the prompt (their descriptions and schemas).
    assert with_tools > without + 500, (with_tools, without)
