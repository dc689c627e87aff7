"""The tool fields of a chat request (`tools`, `tool_choice`, `parallel_tool_calls`, `response_format`) and the
messages that carry calls (an assistant's `tool_calls`, a `role: "tool"` result), checked, one sentence per refusal.

What the model's template needs differs from what OpenAI sends in one place: a call's `arguments` is a JSON string
on the wire, and templates (Qwen's, Llama's) write `arguments | tojson` or walk its items, so here it becomes the
object it holds.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Optional

from app.engine.schema_limits import schema_problem, schemas_problem
from app.serve.errors import BadRequest
from app.serve.field_types import flag, parse_json_text

MAX_TOOLS = 128
# How deep a call's arguments lie in the body: body, messages, [i], tool_calls, [k], function, arguments.
ARGUMENTS_DEPTH = 6
ChoiceMode = Literal["none", "auto", "required", "function"]


@dataclass(frozen=True)
class ToolRequest:
    """What a request asks about tools: the definitions (OpenAI's shape) and how the reply may use them."""

    tools: tuple[dict, ...] = ()
    choice: ChoiceMode = "auto"
    function: str = ""  # with choice "function": the one it must call
    parallel: bool = True
    response_format: str = "text"  # "text", "json_object", "json_schema"
    json_schema: Optional[dict] = None

    @property
    def offered(self) -> tuple[dict, ...]:
        """The tools the model is told about (none with tool_choice "none"; the named one only, when named)."""
        if self.choice == "none":
            return ()
        if self.choice == "function":
            return tuple(t for t in self.tools if t["function"]["name"] == self.function)
        return self.tools


def parse_tool_request(data: dict) -> ToolRequest:
    tools = parse_tools(data.get("tools"))
    choice, function = _choice(data.get("tool_choice"), tools)
    parallel = flag(data, "parallel_tool_calls", True)
    kind, schema = _response_format(data.get("response_format"))
    if kind != "text" and choice in ("required", "function"):
        raise BadRequest('"response_format" and a forced "tool_choice" cannot be asked for together.')
    request = ToolRequest(tools, choice, function, parallel, kind, schema)
    if choice in ("required", "function"):
        # A forced call is decoded under a grammar of the offered tools' parameters (app.engine.tools.forced_call).
        offered = {t["function"]["name"] for t in request.offered}
        problem = schemas_problem(
            {
                f"tools[{i}].function.parameters": t["function"]["parameters"]
                for i, t in enumerate(tools)
                if t["function"]["name"] in offered
            }
        )
        if problem:
            raise BadRequest(problem)
    return request


def parse_tools(value: Any) -> tuple[dict, ...]:
    """OpenAI's `tools` list, checked: each a function with a name, a description and a parameters schema."""
    if value is None:
        return ()
    if not isinstance(value, list) or len(value) > MAX_TOOLS:
        raise BadRequest(f'"tools" must be a list of at most {MAX_TOOLS} {{"type": "function", ...}} objects.')
    names = set()
    out = []
    for i, tool in enumerate(value):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type", "function") != "function" or not isinstance(function, dict):
            raise BadRequest(f'tools[{i}] must be {{"type": "function", "function": {{"name", ...}}}}.')
        name = function.get("name")
        if not isinstance(name, str) or not name or len(name) > 64 or not name.replace("-", "_").isidentifier():
            raise BadRequest(f"tools[{i}].function.name must be 1-64 letters, digits, '_' or '-'.")
        if name in names:
            raise BadRequest(f"tools[{i}] names {name!r} a second time.")
        names.add(name)
        parameters = function.get("parameters", {"type": "object", "properties": {}})
        if not isinstance(parameters, dict):
            raise BadRequest(f"tools[{i}].function.parameters must be a JSON schema object.")
        description = function.get("description", "")
        if not isinstance(description, str):
            raise BadRequest(f"tools[{i}].function.description must be a string.")
        clean: dict[str, Any] = {"name": name, "description": description, "parameters": parameters}
        if function.get("strict") is not None:
            clean["strict"] = flag(function, "strict", shown=f"tools[{i}].function.strict")
        out.append({"type": "function", "function": clean})
    return tuple(out)


def _choice(value: Any, tools: tuple[dict, ...]) -> tuple[ChoiceMode, str]:
    if value is None:
        return "auto", ""
    if value in ("none", "auto", "required"):
        if value == "required" and not tools:
            raise BadRequest('"tool_choice" is "required" but the request offers no "tools".')
        return value, ""
    if isinstance(value, dict) and value.get("type") == "function" and isinstance(value.get("function"), dict):
        name = value["function"].get("name")
        if not any(t["function"]["name"] == name for t in tools):
            raise BadRequest(f'"tool_choice" names the function {name!r}, which "tools" does not hold.')
        return "function", name
    raise BadRequest(
        '"tool_choice" must be "none", "auto", "required" or {"type": "function", "function": {"name": ...}}.'
    )


def _response_format(value: Any) -> tuple[str, Optional[dict]]:
    if value is None:
        return "text", None
    kind = value.get("type") if isinstance(value, dict) else None
    if kind in ("text", "json_object"):
        return kind, None
    if kind == "json_schema":
        spec = value.get("json_schema")
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise BadRequest('"response_format".json_schema.schema must be a JSON schema object.')
        flag(spec, "strict", shown="response_format.json_schema.strict")
        problem = schema_problem(schema, "response_format.json_schema.schema")
        if problem:
            raise BadRequest(problem)
        return kind, schema
    raise BadRequest('"response_format".type must be "text", "json_object" or "json_schema".')


def tool_message(message: dict, index: int) -> dict:
    """A `role: "tool"` message as the template takes it: its content, the call it answers and that call's name."""
    call_id = message.get("tool_call_id")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f'messages[{index}] is a tool result without a "tool_call_id".')
    out = {"role": "tool", "tool_call_id": call_id}
    name = message.get("name")
    if isinstance(name, str):
        out["name"] = name
    return out


def assistant_calls(message: dict, index: int) -> list[dict]:
    """An assistant message's `tool_calls`, with each call's `arguments` as the object it holds."""
    value = message.get("tool_calls")
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest(f"messages[{index}].tool_calls must be a list.")
    out = []
    for k, call in enumerate(value):
        function = call.get("function") if isinstance(call, dict) else None
        where = f"messages[{index}].tool_calls[{k}]"
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise BadRequest(f'{where} must be {{"id", "type": "function", "function": {{"name", "arguments"}}}}}}}}.')
        arguments = function.get("arguments", "{}")
        if isinstance(arguments, str):
            # A string the body's own checks saw as text: its JSON is checked as the body's is, where it lies.
            arguments = parse_json_text(arguments or "{}", f"{where}.function.arguments", ARGUMENTS_DEPTH)
        if not isinstance(arguments, dict):
            raise BadRequest(f"{where}.function.arguments must be a JSON object.")
        call_id = call.get("id")
        out.append(
            {
                "id": call_id if isinstance(call_id, str) else f"call_{index}_{k}",
                "type": "function",
                "function": {"name": function["name"], "arguments": arguments},
            }
        )
    return out
