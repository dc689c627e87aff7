"""A whole recorded Claude Code session (tests/fixtures/agents/claude_code_session/, five requests) replayed through
`specchat-cli serve` with the tiny models by the bench's own replay (app/bench/agent_replay.py): after the first
request, the prompt is read from the cache, so an agent's next turn starts at once.

The texts are cut as in test_anthropic_claude_code.py, but longer (the tiny model's context is 2048 tokens, and each
turn must stay small beside the prompt it adds to, as it is beside Claude Code's whole prompt); the cut is the same
for the same text, so each request still repeats the last one's prompt and adds a turn."""

from __future__ import annotations

import pytest

from app.bench.agent_replay import load_session, replay
from app.bench.agents import CACHED_BAR, DEFAULT_SESSION
from tests.serve.api_fixtures import DEADLINE_S, cut_texts, serving_process

# Long enough that the first prompt is some 1,300 tokens, short enough that the fifth still fits the context.
TEXT_CHARS = 1400


def _cut(body: dict) -> dict:
    return cut_texts(body, TEXT_CHARS)


@pytest.mark.slow
def test_a_recorded_claude_code_session_reads_its_prompts_from_the_cache(tiny_models):
    requests = load_session(DEFAULT_SESSION)
    assert len(requests) >= 5
    with serving_process("--target", tiny_models.target, "--ctx", "2048") as served:
        timings = replay(served.url, requests, max_tokens=8, deadline_s=DEADLINE_S, shape=_cut)
    assert [t.error for t in timings] == [None] * len(requests)
    assert all(t.ttft_s is not None and t.output_tokens > 0 for t in timings)
    for timing in timings[1:]:
        assert timing.cached_share is not None and CACHED_BAR <= timing.cached_share < 1, timing
