"""The pure tool-call parsers (app/engine/tools): streamed in pieces of any size a reply reads the same as whole;
text and calls are never mixed; a call inside <think> is no call; blocks that are not calls stay text."""

from __future__ import annotations

import json
import random

import pytest

from app.engine.tools.stream import (
    ArgumentsPiece,
    CallEnd,
    CallRefused,
    CallStart,
    ContentPiece,
    ToolCallStream,
    split_whole,
)
from tests.engine.tools.test_tool_call_families import FAMILIES, TIME, WEATHER

TOOLS = [WEATHER, TIME]
EXTRA = [
    (
        "hermes",
        'Sure.\n\n```json\n{"name": "get_time", "arguments": {"city": "Oslo"}}\n```\n\n',
        "Sure.",
        [("get_time", {"city": "Oslo"})],
    ),
    (
        "hermes",
        '<think>I could <tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>No call.',
        '<think>I could <tool_call>{"name": "get_time", "arguments": {}}</tool_call></think>No call.',
        [],
    ),
    (
        "hermes",
        '```json\n{"name": "not_offered", "arguments": {}}\n```',
        '```json\n{"name": "not_offered", "arguments": {}}\n```',
        [],
    ),
    ("hermes", "<tool_call>\n{broken json\n</tool_call>", "<tool_call>\n{broken json\n</tool_call>", []),
    ("hermes", '{"a": 1, "b": [2, 3]}', '{"a": 1, "b": [2, 3]}', []),
    (
        "llama3",
        'It is sunny, {"name": "get_weather"} is what I would call.',
        'It is sunny, {"name": "get_weather"} is what I would call.',
        [],
    ),
    (
        "mistral",
        '[TOOL_CALLS]get_weather[ARGS]{"city": "Rome"}[TOOL_CALLS]get_time[ARGS]{"city": "Rome"}',
        "",
        [("get_weather", {"city": "Rome"}), ("get_time", {"city": "Rome"})],
    ),
    ("harmony", "<|channel|>final<|message|>It is 21 C in Rome.<|return|>", "It is 21 C in Rome.", []),
]
OSLO = '{"name": "get_time", "arguments": {"city": "Oslo"}}'
PARIS = '{"name": "get_weather", "arguments": {"city": "Paris"}}'
# Issue 44 class 5: a call counts only in the model's own call syntax. A fenced block is a call only at the reply's
# very end (after at most a short lead-in), never a block quoted inside an answer; a call to a tool that was not
# offered is text. Issue 45 item 15: several calls in one fenced block are several calls.
QUOTED = [
    (
        "hermes",
        f"The file's example:\n\n```json\n{OSLO}\n```\n\nIt only shows the format.",
        f"The file's example:\n\n```json\n{OSLO}\n```\n\nIt only shows the format.",
        [],
    ),
    ("hermes", "x" * 400 + f"\n```json\n{OSLO}\n```", "x" * 400 + f"\n```json\n{OSLO}\n```", []),
    (
        "hermes",
        f'Before:\n```json\n{{"a": 1}}\n```\nThen:\n```json\n{OSLO}\n```',
        f'Before:\n```json\n{{"a": 1}}\n```\nThen:\n```json\n{OSLO}\n```',
        [],
    ),
    (
        "llama3",
        f"The example:\n```json\n{OSLO}\n```\nis an example.",
        f"The example:\n```json\n{OSLO}\n```\nis an example.",
        [],
    ),
    (
        "hermes",
        '<tool_call>\n{"name": "delete_file", "arguments": {"path": "/"}}\n</tool_call>',
        '<tool_call>\n{"name": "delete_file", "arguments": {"path": "/"}}\n</tool_call>',
        [],
    ),
    (
        "hermes",
        "<tool_call>\n<function=delete_file>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>",
        "<tool_call>\n<function=delete_file>\n<parameter=path>\n/\n</parameter>\n</function>\n</tool_call>",
        [],
    ),
    (
        "mistral",
        '[TOOL_CALLS][{"name": "delete_file", "arguments": {"path": "/"}}]',
        '[TOOL_CALLS][{"name": "delete_file", "arguments": {"path": "/"}}]',
        [],
    ),
    (
        "harmony",
        '<|channel|>commentary to=functions.delete_file <|constrain|>json<|message|>{"path": "/"}<|call|>',
        '{"path": "/"}',
        [],
    ),
    (
        "llama3",
        '<|python_tag|>{"name": "delete_file", "parameters": {"path": "/"}}',
        '<|python_tag|>{"name": "delete_file", "parameters": {"path": "/"}}',
        [],
    ),
]
SEVERAL = [
    (
        "hermes",
        f"```json\n[{PARIS}, {OSLO}]\n```",
        "",
        [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Oslo"})],
    ),
    (
        "hermes",
        f"I will look both up.\n```json\n{PARIS}\n{OSLO}\n```\n",
        "I will look both up.",
        [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Oslo"})],
    ),
    (
        "hermes",
        f"```json\n{PARIS}\n```\n\n```json\n{OSLO}\n```",
        "",
        [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Oslo"})],
    ),
    (
        "hermes",
        f"<tool_call>\n{PARIS}\n{OSLO}\n</tool_call>",
        "",
        [("get_weather", {"city": "Paris"}), ("get_time", {"city": "Oslo"})],
    ),
]
CASES = [(family, reply, None, calls) for _, family, reply, calls in FAMILIES] + EXTRA + QUOTED + SEVERAL


def _streamed(family: str, text: str, seed: int):
    rng = random.Random(seed)
    stream, pieces, pos = ToolCallStream(family, TOOLS), [], 0
    while pos < len(text):
        size = rng.randint(1, 7)
        pieces += stream.feed(text[pos : pos + size])
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
        ended = [p.call for p in pieces if isinstance(p, CallEnd)]
        got = [(c.name, json.loads(c.arguments)) for c in ended]
        assert text == whole_content and got == calls
        assert all(p.text.strip() for p in pieces if isinstance(p, ContentPiece))  # never white space alone
        assert [p.index for p in pieces if isinstance(p, CallEnd)] == list(range(len(calls)))
        assert not any(isinstance(p, CallRefused) for p in pieces)
        for call, whole in zip(ended, whole_calls):  # the pieces add up to the call the whole reply gives
            index = next(p.index for p in pieces if isinstance(p, CallStart) and p.id == call.id)
            joined = "".join(p.text for p in pieces if isinstance(p, ArgumentsPiece) and p.index == index)
            assert joined == call.arguments == whole.arguments


def test_only_a_familys_call_markers_reach_the_call_reader():
    """Issue 45 item 14: a control token that is no call marker (Qwen's <|im_start|> written mid-reply) is read as
    nothing, so its name never reaches the content and the call written after it is read."""
    from app.engine.tools.calls import reader_text

    tokens = [("", "<|im_start|>"), ("\n", ""), (PARIS, "")]
    text = "".join(reader_text(t, m, "hermes") for t, m in tokens)
    content, calls = split_whole(text, "hermes", TOOLS)
    assert content == "" and [(c.name, json.loads(c.arguments)) for c in calls] == [("get_weather", {"city": "Paris"})]
    assert (
        reader_text("", "[TOOL_CALLS]", "mistral") == "[TOOL_CALLS]" and reader_text("", "<|im_end|>", "mistral") == ""
    )


EDIT = '{"name": "get_weather", "arguments": {"city": "Paris", "note": "a \\"quoted\\" {brace}"}}'


def test_a_tagged_call_starts_once_its_name_is_whole_and_its_arguments_go_out_as_written():
    stream = ToolCallStream("hermes", TOOLS)
    text = f"Let me look.\n<tool_call>\n{EDIT}\n</tool_call>"
    pieces = [p for char in text for p in stream.feed(char)] + stream.finish()
    kinds = [type(p).__name__ for p in pieces]
    first_call = kinds.index("CallStart")
    assert "ContentPiece" not in kinds[first_call:]  # the lead-in went before the call, the tags never do
    start = pieces[first_call]
    assert isinstance(start, CallStart) and start.name == "get_weather"
    arguments = [p for p in pieces if isinstance(p, ArgumentsPiece)]
    assert len(arguments) > 10  # a piece per character written, not the call at its end
    end = pieces[-1]
    assert isinstance(end, CallEnd) and end.call.id == start.id
    assert "".join(p.text for p in arguments) == end.call.arguments
    assert json.loads(end.call.arguments) == {"city": "Paris", "note": 'a "quoted" {brace}'}
    assert end.call.arguments == split_whole(text, "hermes", TOOLS)[1][0].arguments


def test_the_start_comes_before_the_arguments_are_whole():
    stream = ToolCallStream("hermes", TOOLS)
    cut = EDIT.index("Paris")
    pieces = stream.feed("<tool_call>\n" + EDIT[:cut])
    assert [type(p) for p in pieces] == [CallStart, ArgumentsPiece]
    assert pieces[1].text == '{"city": "'


def test_a_call_that_breaks_is_refused_and_its_text_is_kept():
    stream = ToolCallStream("hermes", TOOLS)
    broken = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}]]\n</tool_call> sorry'
    pieces = [p for char in broken for p in stream.feed(char)] + stream.finish()
    refused = [p for p in pieces if isinstance(p, CallRefused)]
    assert len(refused) == 1 and refused[0].name == "get_weather" and refused[0].reason.endswith(".")
    assert not stream.calls
    assert "".join(p.text for p in pieces if isinstance(p, ContentPiece)) == broken


def test_a_call_to_a_tool_not_offered_never_starts():
    stream = ToolCallStream("hermes", TOOLS)
    text = '<tool_call>\n{"name": "rm_rf", "arguments": {"path": "/"}}\n</tool_call>'
    pieces = [p for char in text for p in stream.feed(char)] + stream.finish()
    assert [type(p) for p in pieces] == [ContentPiece] * len(pieces) and pieces
    assert "".join(p.text for p in pieces) == text


def test_after_a_refused_call_the_next_call_takes_a_new_index():
    stream = ToolCallStream("hermes", TOOLS)
    text = '<tool_call>\n{"name": "get_weather", "arguments": {"city": ]}\n</tool_call>\n<tool_call>\n' + EDIT
    pieces = [p for char in text for p in stream.feed(char)] + stream.finish()
    assert [p.index for p in pieces if isinstance(p, CallRefused)] == [0]
    assert [p.index for p in pieces if isinstance(p, CallEnd)] == [1]
