"""A model on a server with tools: the remote engine passes `tools`, `tool_choice`, the calls and results of the
chat on to it, and reads the `tool_calls` it streams back (OpenAI's framing), so serve returns them as calls."""

from __future__ import annotations

import json

import pytest

from app.engine.config import GenerationConfig
from app.engine.errors import PromptFormatError
from app.engine.events import FinishedEvent
from app.engine.remote.engine import RemoteEngine
from app.engine.targets import ServerModel
from app.engine.tools.stream import split_whole
from tests.remote.fake_openai_server import FakeServer, Script, content_chunk

WEATHER = {
    "type": "function",
    "function": {"name": "get_weather", "description": "", "parameters": {"type": "object", "properties": {}}},
}


def _frame(delta: dict, finish=None) -> dict:
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


STREAMED_CALLS = [
    content_chunk("", None),
    _frame(
        {
            "tool_calls": [
                {"index": 0, "id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": ""}}
            ]
        }
    ),
    _frame({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]}),
    _frame({"tool_calls": [{"index": 0, "function": {"arguments": '"Paris"}'}}]}),
    _frame(
        {
            "tool_calls": [
                {
                    "index": 1,
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ]
        }
    ),
    _frame({}, finish="tool_calls"),
]


def test_tools_go_to_the_server_and_its_calls_come_back():
    messages = [
        {"role": "user", "content": "Weather in Rome?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c0", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
            ],
        },
        {"role": "tool", "tool_call_id": "c0", "content": "21 C"},
        {"role": "user", "content": "And Paris and Oslo?"},
    ]
    config = GenerationConfig(max_tokens=64, tools=json.dumps([WEATHER]), tool_choice="required")
    with FakeServer(Script(chunks=STREAMED_CALLS)) as server:
        engine = RemoteEngine(api_key_for=lambda url: None)
        engine.load_target(ServerModel.at(server.url, "fake-model"))
        finished = [e for e in engine.chat(messages, config) if isinstance(e, FinishedEvent)][0]
        body = server.requests[-1]
    assert body["tools"] == [WEATHER] and body["tool_choice"] == "required"
    assert body["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"city": "Rome"}'
    assert body["messages"][2]["tool_call_id"] == "c0"
    content, calls = split_whole(finished.text, engine.tool_format, [WEATHER])
    assert content == ""
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Oslo"}),
    ]


def test_penalties_go_to_the_server_and_what_it_cannot_give_is_refused():
    with FakeServer(Script(chunks=[content_chunk("hi", finish="stop")])) as server:
        engine = RemoteEngine(api_key_for=lambda url: None)
        engine.load_target(ServerModel.at(server.url, "fake-model"))
        list(
            engine.chat(
                [{"role": "user", "content": "hi"}],
                GenerationConfig(max_tokens=8, presence_penalty=0.5, frequency_penalty=-0.5),
            )
        )
        body = server.requests[-1]
        with pytest.raises(PromptFormatError, match="local GGUF"):
            engine.chat([{"role": "user", "content": "hi"}], GenerationConfig(logprobs=True))
        with pytest.raises(PromptFormatError, match="/v1/completions"):
            engine.completion_tokens("def f():", "\n")
    assert body["presence_penalty"] == 0.5 and body["frequency_penalty"] == -0.5
    assert "repeat_penalty" not in body  # off: not sent, so a server that does not know it is not troubled
