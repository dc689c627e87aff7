"""A reply's tool calls in OpenAI's shapes: whole (`message.tool_calls`) and streamed (`delta.tool_calls`).

A streamed call goes out as OpenAI frames it: its first frame holds `index`, `id`, `type` and `name` with empty
`arguments`, the next frames its arguments' pieces as the model writes them (app.engine.tools.stream says which calls
stream and which go out whole). The chunk that ends a call says so in SpecChat's field, `specchat.call`:
`{"index", "id", "state": "done"}`, or `"state": "refused"` with a `reason` when the call turned out to be no call
(its text then follows as content). The other APIs' shapers read those two to close a call's block or item. Calls are
read from the reply's text by app/engine/tools, in the format of the model's template; `content` is null beside
calls when it holds nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Sequence

from app.engine.tools.calls import ToolCall, ToolFormat
from app.engine.tools.stream import (
    ArgumentsPiece,
    CallEnd,
    CallRefused,
    CallStart,
    ContentPiece,
    Piece,
    ToolCallStream,
)
from app.serve.tool_requests import ToolRequest


@dataclass
class Frame:
    """One chunk's `delta`, and SpecChat's word on a call that ends with it (`specchat.call`)."""

    delta: dict
    call: Optional[dict] = None


def call_stream(request: ToolRequest, family: ToolFormat) -> Optional[ToolCallStream]:
    """The splitter a reply's text goes through, or None when the request offers no tools."""
    offered = request.offered
    return ToolCallStream(family, offered, request.parallel) if offered else None


def message_tool_calls(calls: Sequence[ToolCall]) -> list[dict]:
    return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls]


def frames(pieces: Sequence[Piece]) -> list[Frame]:
    """The frames of chunks for `pieces`: content as it is, a call's head, its arguments' pieces (those that come
    together joined), and its end or refusal on the last of them."""
    out: list[Frame] = []
    for piece in pieces:
        last = out[-1] if out else None
        if isinstance(piece, ContentPiece):
            if last is not None and set(last.delta) == {"content"} and last.call is None:
                last.delta["content"] += piece.text
            else:
                out.append(Frame({"content": piece.text}))
        elif isinstance(piece, CallStart):
            function = {"name": piece.name, "arguments": ""}
            out.append(
                Frame(
                    {"tool_calls": [{"index": piece.index, "id": piece.id, "type": "function", "function": function}]}
                )
            )
        elif isinstance(piece, ArgumentsPiece):
            if last is not None and last.call is None and _arguments_of(last.delta, piece.index):
                last.delta["tool_calls"][0]["function"]["arguments"] += piece.text
            else:
                out.append(Frame({"tool_calls": [{"index": piece.index, "function": {"arguments": piece.text}}]}))
        elif isinstance(piece, (CallEnd, CallRefused)):
            if isinstance(piece, CallEnd):
                note = {"index": piece.index, "id": piece.call.id, "state": "done"}
            else:
                note = {"index": piece.index, "id": piece.id, "state": "refused", "reason": piece.reason}
            ours = last is not None and last.call is None and "tool_calls" in last.delta
            if ours and last is not None and last.delta["tool_calls"][0]["index"] == piece.index:
                last.call = note
            else:
                out.append(Frame({}, note))
    return out


def _arguments_of(delta: dict, index: int) -> bool:
    """Whether `delta` is a frame of call `index`'s arguments (not its head), so a next piece may join it."""
    calls = delta.get("tool_calls") or []
    return len(calls) == 1 and calls[0]["index"] == index and "id" not in calls[0]
