"""Tools through a remote server: the messages that carry calls as OpenAI's wire wants them, and the calls a
server streams (`delta.tool_calls` fragments by index) put back together."""

from __future__ import annotations

import json
from typing import Sequence

from app.engine.image_files import wire_content
from app.engine.tools.calls import arguments_text

MAX_CALLS = 64
MAX_ARGUMENT_CHARS = 1 << 20


def wire_message(message: dict) -> dict:
    """A chat message for the server: role and content (its pictures as data: URLs), an earlier reply's
    `reasoning_content`, and a call's `arguments` as the JSON string OpenAI sends."""
    out = {"role": message["role"], "content": wire_content(message.get("content", ""))}
    if message.get("tool_calls"):
        out["tool_calls"] = [
            {
                **call,
                "function": {
                    **call["function"],
                    "arguments": call["function"]["arguments"]
                    if isinstance(call["function"].get("arguments"), str)
                    else json.dumps(call["function"].get("arguments") or {}),
                },
            }
            for call in message["tool_calls"]
        ]
        out["content"] = message.get("content") or None
    if message.get("tool_call_id"):
        out["tool_call_id"] = message["tool_call_id"]
    if message.get("reasoning_content"):
        out["reasoning_content"] = message["reasoning_content"]  # an earlier reply's thinking: the template decides
    return out


class StreamedCalls:
    """One reply's calls from its fragments: the first fragment of an index names the call, later ones add to its
    arguments. Bounded: at most MAX_CALLS calls and MAX_ARGUMENT_CHARS of arguments each."""

    def __init__(self) -> None:
        self._calls: dict[int, dict] = {}

    def feed(self, fragments: Sequence[dict]) -> None:
        for fragment in fragments:
            index = fragment.get("index", len(self._calls))
            if not isinstance(index, int) or (index not in self._calls and len(self._calls) >= MAX_CALLS):
                continue
            call = self._calls.setdefault(index, {"name": "", "arguments": ""})
            given = fragment.get("function")
            function: dict = given if isinstance(given, dict) else {}
            if isinstance(function.get("name"), str):
                call["name"] += function["name"]
            arguments = function.get("arguments")
            if isinstance(arguments, str) and len(call["arguments"]) + len(arguments) <= MAX_ARGUMENT_CHARS:
                call["arguments"] += arguments
            elif isinstance(arguments, dict):
                call["arguments"] = json.dumps(arguments)

    def texts(self) -> list[str]:
        """Each complete call as a Hermes `<tool_call>` block (a call whose arguments are no JSON object is
        left out: it could not be sent back to a client as one)."""
        out = []
        for _, call in sorted(self._calls.items()):
            arguments = arguments_text(call["arguments"] or "{}")
            if call["name"] and arguments is not None:
                body = json.dumps({"name": call["name"], "arguments": json.loads(arguments)}, ensure_ascii=False)
                out.append(f"<tool_call>\n{body}\n</tool_call>")
        return out
