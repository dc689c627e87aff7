"""The model-calls-a-tool loop that the window and `generate --mcp` share. No Qt, no terminal.

A reply that calls tools is followed by the calls, each asked about first (allow once, always allow this tool,
deny), their results sent back to the model as `tool` messages, and another reply; the loop ends when a reply calls
nothing, when the model only repeats calls it already made (it is then asked once more without tools, to answer from
the results it has), or after `max_steps` replies. How a front end asks the person, and how it shows a call, is its
own business; what is decided, and what the model is sent, is decided here.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Any, Literal, Optional, Sequence

from app.engine.tools.calls import ToolCall
from app.mcp.records import ToolInfo, ToolResult, no_such_tool
from app.store.tool_calls import CallAnswer, ToolCallRecord

DEFAULT_MAX_STEPS = 8
MAX_STEPS = 64
REFUSED = "The user did not allow this call. Answer without it, or ask the user."
STOPPED = "The user stopped this call before it finished."

# answer: the reply calls nothing (the loop is over); calls: run them and ask again; repeated: every call was
# already made with the same arguments (small models loop so), so ask again without tools; limit: max_steps
# replies were asked for and the model is still calling.
NextStep = Literal["answer", "calls", "repeated", "limit"]


def arguments_object(text: str) -> dict[str, Any]:
    """The call's arguments as a server wants them: a JSON object ({} for a model that wrote none, or no object)."""
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def pending_record(call: ToolCall, tool: Optional[ToolInfo]) -> ToolCallRecord:
    """A call as it is first shown, not yet answered; `tool`: the offered tool of that name (None: none is)."""
    return ToolCallRecord(
        id=call.id,
        name=call.name,
        arguments=call.arguments,
        server=tool.server if tool else "",
        tool=tool.tool if tool else "",
    )


def answered(record: ToolCallRecord, answer: CallAnswer, result: ToolResult) -> ToolCallRecord:
    return dataclasses.replace(
        record,
        answer=answer,
        result=result.text,
        is_error=result.is_error,
        truncated=result.truncated,
        seconds=round(result.seconds, 3),
    )


def denied(record: ToolCallRecord) -> ToolCallRecord:
    return answered(record, "denied", ToolResult(REFUSED, is_error=True))


def stopped(record: ToolCallRecord) -> ToolCallRecord:
    return answered(record, "stopped", ToolResult(STOPPED, is_error=True))


def unknown_tool(record: ToolCallRecord) -> ToolCallRecord:
    """A call to a tool no server offers, answered so: nothing runs, and the model is told."""
    return answered(record, "denied", no_such_tool(record.name))


def call_messages(content: str, calls: Sequence[ToolCallRecord]) -> list[dict]:
    """The assistant's turn with its calls and one `tool` message per call with its result. The calls are in
    OpenAI's shape except that `arguments` is the object, not its JSON text: templates write `arguments | tojson`
    (as app.serve.tool_requests hands them over too), and a string there would be written quoted. A call that was
    never answered (the window closed while it was asked about) is sent as stopped, so every call has its result."""
    template_calls = [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": arguments_object(call.arguments)},
        }
        for call in calls
    ]
    turn: list[dict] = [{"role": "assistant", "content": content, "tool_calls": template_calls}]
    for call in calls:
        result = call.result if call.answer else STOPPED
        turn.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": result})
    return turn


@dataclass
class ToolGrants:
    """Who may run without asking: every call (`allow_all`, the CLI's --allow-tools) or the tools the person said
    "always" to, for the rest of the run (the CLI) or the chat (the window). A grant is bound to the tool itself
    (ToolInfo.grant_key: its server, its own name, its schema), never to the name the model calls it by: when a
    server fails and another server's tool of the same name takes that name, or a tool changes, it is asked about."""

    allow_all: bool = False
    always: set[str] = field(default_factory=set)

    def allows(self, tool: ToolInfo) -> bool:
        return self.allow_all or tool.grant_key in self.always

    def grant(self, tool: ToolInfo) -> None:
        self.always.add(tool.grant_key)


@dataclass
class ToolRun:
    """One question's run of the loop: how many replies were asked for, and the calls they made."""

    max_steps: int = DEFAULT_MAX_STEPS
    steps: int = 0
    calls_made: list[ToolCallRecord] = field(default_factory=list)

    def next_step(self, calls: Sequence[ToolCall]) -> NextStep:
        """What follows a finished reply that made `calls` (counted as one step)."""
        self.steps += 1
        if not calls:
            return "answer"
        if self.all_repeated(calls):
            return "repeated"
        if self.steps >= self.max_steps:
            return "limit"
        return "calls"

    def all_repeated(self, calls: Sequence[ToolCall]) -> bool:
        """Whether every call was already made in this run, with the same arguments."""
        made = {(c.name, _canonical(c.arguments)) for c in self.calls_made}
        return all((c.name, _canonical(c.arguments)) in made for c in calls)

    def note(self, records: Sequence[ToolCallRecord]) -> None:
        self.calls_made.extend(records)


def limit_sentence(max_steps: int) -> str:
    return f"Stopped after {max_steps} steps: the model was still calling tools."


def _canonical(arguments: str) -> str:
    return json.dumps(arguments_object(arguments), sort_keys=True)
