"""Codex CLI's real requests (tests/fixtures/agents/codex/, recorded from `codex exec`) replayed through the real
`specchat-cli serve` process over the tiny model, and every answer read by the official `openai` SDK's own stream
parser: each event typed, numbered in order, each output item opened and closed, and the stream's last event the
one Codex waits for. Replies are cut to a few tokens (the tiny model writes to its limit)."""

from __future__ import annotations

import json
from pathlib import Path

import openai
import pytest

from app.testing.synthetic import TinyShape, write_tiny_model
from tests.serve.api_fixtures import DEADLINE_S, serving_process

FIXTURES = sorted((Path(__file__).parents[1] / "fixtures" / "agents" / "codex").glob("*.json"))
# The fields the SDK's responses.create names; the rest of Codex's body goes as it is, through extra_body.
SDK_FIELDS = {"model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "store"}
SDK_FIELDS |= {"include", "prompt_cache_key", "text", "max_output_tokens", "temperature", "top_p", "metadata"}


# Codex's first turn alone (its instructions and tools' schemas) is tens of thousands of the tiny model's tokens.
LONG_CONTEXT = 131072


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    target = write_tiny_model(
        tmp_path_factory.mktemp("long") / "tiny-long.gguf", shape=TinyShape(context_length=LONG_CONTEXT)
    )
    with serving_process("--target", target, "--ngram", "--ctx", LONG_CONTEXT) as serve:
        yield serve


@pytest.mark.slow
@pytest.mark.parametrize("fixture", FIXTURES, ids=[f.stem for f in FIXTURES])
def test_codex_requests_are_answered_as_the_sdk_reads_them(served, fixture):
    body = dict(json.loads(fixture.read_text())["body"], max_output_tokens=6)
    assert body.pop("stream") is True  # Codex streams every turn
    known = {k: v for k, v in body.items() if k in SDK_FIELDS}
    extra = {k: v for k, v in body.items() if k not in SDK_FIELDS}
    sdk = openai.OpenAI(base_url=f"{served.url}/v1", api_key="none", timeout=DEADLINE_S * 4, max_retries=0)
    events = list(sdk.responses.create(stream=True, extra_body=extra, **known))

    kinds = [e.type for e in events]
    assert kinds[-1] != "response.failed", events[-1].response.error
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] in ("response.completed", "response.incomplete"), kinds[-3:]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert all(type(e).__name__ != "BaseModel" for e in events)  # each one of the SDK's own event types
    opened: list[int] = []
    for event in events:
        if event.type == "response.output_item.added":
            assert not opened, "an item opened before the last one closed"
            opened.append(event.output_index)
        elif event.type == "response.output_item.done":
            assert opened == [event.output_index]
            opened.clear()
    final = events[-1].response
    assert final.usage.input_tokens > 1000 and final.usage.output_tokens == 6  # Codex's long prompt, all read
