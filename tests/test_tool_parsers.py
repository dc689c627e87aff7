"""The pure tool-call parsers (app/engine/tools): streamed in pieces of any size a reply reads the same as whole;
text and calls are never mixed; a call inside <think> is no call; blocks that are not calls stay text."""

from __future__ import annotations

import json
import random

import pytest

from app.engine.tools.stream import CallPiece, ContentPiece, ToolCallStream, split_whole
from tests.test_tool_call_families import FAMILIES, TIME, WEATHER

TOOLS = [WEATHER, TIME]
EXTRA = [
    ("hermes", 'Sure.\n\n```json\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n```\n\n', "Sure.",
     [("get_time", {"city": "Oslo"})]),
    ("hermes", '<think>I could <tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>No call.',
     '<think>I could <tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>No call.', []),
    ("hermes", "```json\n{\"name\": \"not_offered\", \"arguments\": {}}\n```",
     "```json\n{\"name\": \"not_offered\", \"arguments\": {}}\n```", []),
    ("hermes", "<tool_call>\n{broken json\n</tool_call>", "<tool_call>\n{broken json\n</tool_call>", []),
    ("hermes", '{"a": 1, "b": [2, 3]}', '{"a": 1, "b": [2, 3]}', []),
    ("llama3", "It is sunny, {\"name\": \"get_weather\"} is what I would call.",
     "It is sunny, {\"name\": \"get_weather\"} is what I would call.", []),
    ("mistral", '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}[TOOL_CALLS]get_time[ARGS]{"city": "Rome"}', "",
     [("get_weather", {"city": "Rome"}), ("get_time", {"city": "Rome"})]),
    ("harmony", "<|channel|>final<|message|>It is 21 C in Rome.<|return|>", "It is 21 C in Rome.", []),
]
CASES = [(family, reply, None, calls) for _, family, reply, calls in FAMILIES] + EXTRA


def _streamed(family: str, text: str, seed: int):
    rng = random.Random(seed)
    stream, pieces, pos = ToolCallStream(family, TOOLS), [], 0
    while pos < len(text):
        size = rng.randint(1, 7)
        pieces += stream.feed(text[pos:pos + size])
        pos += size
    pieces += stream.finish()
    return pieces


@pytest.mark.parametrize("family,reply,content,calls", CASES)
def test_streamed_in_any_pieces_reads_as_whole(family, reply, content, calls):
    whole_content, whole_calls = split_whole(reply, family, TOOLS)
    assert [(c.name, json.loads(c.arguments)) for c in whole_calls] == calls
    if content is not None:
        assert whole_content == content
    for seed in range(5):
        pieces = _streamed(family, reply, seed)
        text = "".join(p.text for p in pieces if isinstance(p, ContentPiece))
        got = [(p.call.name, json.loads(p.call.arguments)) for p in pieces if isinstance(p, CallPiece)]
        assert text == whole_content and got == calls
        assert all(p.text.strip() for p in pieces if isinstance(p, ContentPiece))  # never white space alone
        assert [p.index for p in pieces if isinstance(p, CallPiece)] == list(range(len(calls)))
