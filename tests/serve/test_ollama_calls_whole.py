"""Ollama's API sends each tool call whole although the reply's call streams elsewhere: the line that holds it has
the tool's name and all its arguments as an object, and no line holds a call's piece."""

from __future__ import annotations

import json

from app.engine.config import GenerationConfig
from app.engine.events import TokenEvent
from app.serve.ollama.replies import OllamaReply
from app.serve.replies import ReplyShaper
from app.serve.requests import ApiLimits, parse_chat_request

TOOL = {"type": "function", "function": {"name": "edit", "parameters": {"type": "object", "properties": {}}}}


def _lines(text: str) -> list[dict]:
    body = {"model": "m", "messages": [{"role": "user", "content": "edit"}], "tools": [TOOL], "stream": True}
    request = parse_chat_request(body, ApiLimits(), GenerationConfig())
    reply = OllamaReply("chat", "m", ReplyShaper(request, model="m", tool_format="hermes"), arrived_ns=0)
    lines = []
    for i, char in enumerate(text):  # one character a token: the call is read as it is written
        lines += reply.lines(reply.take(TokenEvent(1, i, i, char, "target")))
    return lines + reply.lines([], last=True)


def test_a_call_written_a_character_at_a_time_goes_out_in_one_line():
    arguments = {"path": "a.py", "new_string": "x = 2"}
    call = json.dumps({"name": "edit", "arguments": arguments})
    lines = _lines(f"I will edit it.\n<tool_call>\n{call}\n</tool_call>\n<tool_call>\n{call}\n</tool_call>")
    calls = [c for line in lines for c in line["message"].get("tool_calls", [])]
    assert [(c["function"]["name"], c["function"]["arguments"]) for c in calls] == [("edit", arguments)] * 2
    assert [c["function"]["index"] for c in calls] == [0, 1]
    assert "".join(line["message"]["content"] for line in lines) == "I will edit it."


def test_a_call_that_breaks_is_no_call_and_its_text_is_kept():
    broken = '<tool_call>\n{"name": "edit", "arguments": {"path": ]}\n</tool_call>'
    lines = _lines(broken)
    assert not [c for line in lines for c in line["message"].get("tool_calls", [])]
    assert "".join(line["message"]["content"] for line in lines) == broken
