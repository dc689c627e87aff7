"""`generate --tools FILE.json` and `--json-schema FILE`: the files read and checked, and the reply's calls said.

The tools file holds OpenAI-style definitions (a list of {"type": "function", "function": {...}}, or an object
with a "tools" list, as a request body has it); they go to the model's chat template, and the calls in the reply
are read in the model's own format (app.engine.tools), printed after the text, or under "tool_calls" with --json.
"""

from __future__ import annotations

import json
from typing import Sequence

from app.cli.checks import UsageError, read_text_file
from app.engine.schema_limits import schema_problem
from app.engine.tools.calls import ToolCall, ToolFormat
from app.engine.tools.stream import split_whole
from app.serve.errors import BadRequest
from app.serve.tool_requests import parse_tools


def _json_file(path: str, what: str):
    text = read_text_file(path, what)
    try:
        return json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{what} {path}: not valid JSON ({exc})") from None
    except RecursionError:
        raise UsageError(f"{what} {path}: the JSON nests too deeply to read") from None


def read_tools(path: str) -> str:
    """The tools' JSON text for GenerationConfig.tools. Raises UsageError."""
    value = _json_file(path, "--tools")
    if isinstance(value, dict) and "tools" in value:
        value = value["tools"]
    try:
        tools = parse_tools(value)
    except BadRequest as exc:
        raise UsageError(f"--tools {path}: {exc}") from None
    if not tools:
        raise UsageError(f"--tools {path}: the list holds no tools")
    return json.dumps(list(tools))


def read_schema(path: str) -> str:
    """The JSON schema's text for GenerationConfig.json_schema. Raises UsageError."""
    value = _json_file(path, "--json-schema")
    if isinstance(value, dict) and isinstance(value.get("schema"), dict):
        value = value["schema"]  # a response_format's json_schema object
    if not isinstance(value, dict):
        raise UsageError(f"--json-schema {path}: a JSON schema is an object")
    problem = schema_problem(value, "schema")
    if problem:
        raise UsageError(f"--json-schema {path}: {problem}")
    return json.dumps(value)


def reply_calls(text: str, family: ToolFormat, tools_json: str) -> tuple[str, list[ToolCall]]:
    """The reply's content and its calls."""
    return split_whole(text, family, json.loads(tools_json))


def call_lines(calls: Sequence[ToolCall]) -> list[str]:
    return [f"tool call: {call.name} {call.arguments}" for call in calls]


def calls_json(calls: Sequence[ToolCall]) -> list[dict]:
    return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls]
