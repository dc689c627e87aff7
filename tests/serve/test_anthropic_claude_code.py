"""Claude Code's own requests (tests/fixtures/agents/claude_code/, recorded from Claude Code 2.1.197) replayed through
`specchat-cli serve` with the tiny models, every streamed answer read by the `anthropic` SDK's own parser.

The tiny model's context (2048 tokens) cannot hold Claude Code's prompt (about 80 KB), so every text is cut to
api_fixtures.TEXT_CHARS characters before it is sent; the blocks, roles, tools, headers and fields are sent as
recorded, and max_tokens is lowered so the tiny model's reply stays short."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import pytest

from tests.serve.api_fixtures import DEADLINE_S, client, cut_texts, serving_process

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "agents" / "claude_code"
KEY = "sk-test-claude-code"
# Headers that belong to the recorded connection, not to the request.
CONNECTION_HEADERS = {"host", "content-length", "connection", "accept-encoding", "x-api-key"}
# The fields the SDK's messages.stream() takes by name; the rest go in extra_body, as recorded.
NAMED = ("model", "messages", "max_tokens")


def _recorded(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def served(tiny_models):
    with serving_process("--target", tiny_models.target, "--api-key", KEY) as serve:
        yield serve


@pytest.mark.slow
def test_claude_codes_requests_stream_events_the_sdk_reads_and_share_the_cache(served):
    sdk = anthropic.Anthropic(base_url=served.url, api_key=KEY, timeout=DEADLINE_S * 2, max_retries=0)
    finals = []
    for name in ("01_first_turn.json", "02_tool_result.json"):  # in the order Claude Code sent them
        recorded = _recorded(name)
        body = cut_texts(recorded["body"])
        headers = {k: v for k, v in recorded["headers"].items() if k.lower() not in CONNECTION_HEADERS}
        extra = {k: v for k, v in body.items() if k not in NAMED and k != "stream"}
        with sdk.messages.stream(
            model=body["model"], messages=body["messages"], max_tokens=16, extra_body=extra, extra_headers=headers
        ) as stream:
            events = [event.type for event in stream]
            final = stream.get_final_message()
        assert events[0] == "message_start" and events[-2:] == ["message_delta", "message_stop"], name
        opened = [e for e in events if e == "content_block_start"]
        assert len(opened) == events.count("content_block_stop") == len(final.content) >= 1, name
        assert final.stop_reason in ("end_turn", "max_tokens", "tool_use")
        assert final.usage.output_tokens > 0
        finals.append(final)
    # The second request repeats the first's prompt (its billing line and system messages included): its KV cache
    # is read, not the prompt again.
    usage = finals[1].usage
    assert usage.cache_read_input_tokens >= 0.9 * (usage.cache_read_input_tokens + usage.input_tokens), usage


@pytest.mark.slow
def test_claude_codes_probe_is_answered_and_its_telemetry_gets_a_quick_404(served):
    probe = _recorded("00_probe.json")
    with client(KEY) as http:
        answer = http.request(probe["method"], f"{served.url}{probe['path']}")
        assert answer.status_code == 200  # HEAD /: "is anyone there", which Ollama's clients ask too
        telemetry = http.post(f"{served.url}/api/event_logging/batch", json={"events": []})
        assert telemetry.status_code == 404
        assert "/v1/messages" in telemetry.json()["error"]["message"]
        counted = http.post(
            f"{served.url}/v1/messages/count_tokens?beta=true",
            json={k: v for k, v in cut_texts(_recorded("02_tool_result.json")["body"]).items() if k != "stream"},
        )
        assert counted.status_code == 200 and counted.json()["input_tokens"] > 0
