"""A reply's tool calls in OpenAI's shapes: whole (`message.tool_calls`) and streamed (`delta.tool_calls`).

A streamed call goes out as OpenAI frames it: its first frame holds `index`, `id`, `type` and `name` with empty
`arguments`, the next frames the arguments' fragments. Calls are read from the reply's text by
app/engine/tools, in the format of the model's template; `content` is null beside calls when it holds nothing.
"""

from __future__ import annotations

from typing import Optional, Sequence

from app.engine.tools.calls import ToolCall, ToolFormat
from app.engine.tools.stream import CallPiece, ContentPiece, Piece, ToolCallStream
from app.serve.tool_requests import ToolRequest


def call_stream(request: ToolRequest, family: ToolFormat) -> Optional[ToolCallStream]:
    """The splitter a reply's text goes through, or None when the request offers no tools."""
    offered = request.offered
    return ToolCallStream(family, offered, request.parallel) if offered else None


def message_tool_calls(calls: Sequence[ToolCall]) -> list[dict]:
    return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls]


def deltas(pieces: Sequence[Piece]) -> list[dict]:
    """The `delta`s of chunks for `pieces`: content as it is, each call in two frames (its head, its arguments)."""
    out: list[dict] = []
    for piece in pieces:
        if isinstance(piece, ContentPiece):
            if out and set(out[-1]) == {"content"}:
                out[-1]["content"] += piece.text
            else:
                out.append({"content": piece.text})
        elif isinstance(piece, CallPiece):
            call = piece.call
            out.append(
                {
                    "tool_calls": [
                        {
                            "index": piece.index,
                            "id": call.id,
                            "type": "function",
                            "function": {"name": call.name, "arguments": ""},
                        }
                    ]
                }
            )
            out.append({"tool_calls": [{"index": piece.index, "function": {"arguments": call.arguments}}]})
    return out
