"""A reply's tool calls and their results, stored with the reply (the `tool_calls` column) so a chat keeps them.

One JSON list per reply, each call with what the person answered and what the tool gave back. A column of the
message rather than a table, like attachments: the calls are read, branched and deleted with their reply.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any, Literal, Optional, Sequence

from app.store import _fields

# once / always: the person allowed it (always: this tool, for the rest of the chat); denied: the model was sent a
# refusal; stopped: Stop ended it before or while it ran; repeated: the same call with the same arguments was already
# made for this question, so it did not run again and its reply is left out of what the model reads (the next reply
# was asked without tools, to answer from the earlier result); "": not answered yet.
CallAnswer = Literal["", "once", "always", "denied", "stopped", "repeated"]


@dataclass(frozen=True)
class ToolCallRecord:
    """One call a reply made: `name` as the model wrote it, `arguments` as a JSON object's text, the server and its
    own name for the tool, and the result the model was sent (a refusal or an error sentence included)."""

    id: str = ""
    name: str = ""
    arguments: str = "{}"
    server: str = ""
    tool: str = ""
    answer: CallAnswer = ""
    result: str = ""
    is_error: bool = False
    truncated: bool = False
    seconds: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ToolCallRecord:
        record, _rejected = _fields.from_dict(cls, data)
        return record

    def openai(self) -> dict[str, Any]:
        """The call in OpenAI's `tool_calls` shape (`arguments` as JSON text), as the API and export write it."""
        return {"id": self.id, "type": "function", "function": {"name": self.name, "arguments": self.arguments}}


def encode_tool_calls(calls: Sequence[ToolCallRecord]) -> Optional[str]:
    """The column's text (NULL for a reply without calls)."""
    return json.dumps([call.to_dict() for call in calls], ensure_ascii=False) if calls else None


def decode_tool_calls(text: Optional[str]) -> tuple[ToolCallRecord, ...]:
    """Raises ValueError or TypeError for text that is not such a list (the caller shows the reply without it)."""
    if not text:
        return ()
    value = json.loads(text)
    if not isinstance(value, list):
        raise TypeError("tool_calls is not a list")
    return tuple(ToolCallRecord.from_dict(item) for item in value if isinstance(item, dict))
