"""A /v1/responses body read into the chat request the engine runs, every bad value refused with one sentence.

The Responses API is read by translation: its `input` items become chat messages and its tools chat tools, and
the chat body that results goes through the chat API's own checks (app.serve.requests), so sampling, tools,
pictures and schemas are checked once, whatever API a request came by.

The server keeps no state: every request carries the whole conversation, and `previous_response_id` (or a
`conversation`, or an `item_reference`) is refused with a sentence saying so. Tools of types the model cannot call
here (`web_search`, `image_generation`, `local_shell`, ...) are left out of what the model is offered, with one line
in the log: an agent that offers them still gets its answer. A `custom` tool (free-form text in, as Codex's
apply_patch takes) is offered to the model as a function with one string parameter, `input`; a `namespace` (Codex
sends one per MCP server) offers its functions under their own names, and their calls go back with the namespace.
"""

from __future__ import annotations

import json
import re
import sys
from dataclasses import dataclass, field
from typing import Any, Optional

from app.engine.config import GenerationConfig
from app.serve.errors import BadRequest
from app.serve.field_types import is_int
from app.serve.requests import ApiLimits, ChatRequest, parse_chat_request

# Roles an input message may have; OpenAI's "developer" is the chat API's "system" (app.serve.requests reads it).
ROLES = ("user", "assistant", "system", "developer")
# The one parameter a custom (free-form) tool is offered with: the call's whole input as text.
CUSTOM_INPUT = "input"
# The most characters of a custom tool's grammar that go into what the model is told about it.
MAX_GRAMMAR_CHARS = 4000
# reasoning.effort's words as the chat API's (low, medium, high); "none" turns thinking off.
EFFORTS = {"minimal": "low", "low": "low", "medium": "medium", "high": "high", "xhigh": "high"}
# Where a chat message came from ("instructions", "input[3]"), kept on it until the chat body is read.
SOURCE = "_source"
STATELESS = 'This server keeps no state between requests; send the whole conversation in "input" instead of {what}.'


@dataclass(frozen=True)
class ResponsesRequest:
    """One /v1/responses request: the chat request the engine runs, and what its reply needs to be shaped."""

    chat: ChatRequest
    custom: frozenset[str] = frozenset()  # tools offered as functions whose calls go back as custom_tool_call
    namespaces: dict[str, str] = field(default_factory=dict)  # a function's name -> the namespace it came in
    echo: dict = field(default_factory=dict)  # the request's settings, as the response object repeats them


def parse_responses_request(data: dict, limits: ApiLimits, defaults: GenerationConfig) -> ResponsesRequest:
    """A /v1/responses body, checked. `defaults` says how this server speculates. Raises BadRequest."""
    for name, what in (("previous_response_id", '"previous_response_id"'), ("conversation", 'a "conversation"')):
        if data.get(name) is not None:
            raise BadRequest(STATELESS.format(what=what))
    if data.get("background"):
        raise BadRequest('"background" is not supported by this server: it answers while the request waits.')
    tools, custom, namespaces = _tools(data.get("tools"))
    messages = _messages(data.get("input"), data.get("instructions"), custom, namespaces)
    sources = [message.pop(SOURCE) for message in messages]
    body: dict[str, Any] = {
        "messages": messages,
        "stream": data.get("stream"),
        "model": data.get("model", ""),
        "temperature": data.get("temperature"),
        "top_p": data.get("top_p"),
        "parallel_tool_calls": data.get("parallel_tool_calls"),
    }
    if tools:
        body["tools"] = tools
    if data.get("tool_choice") is not None:
        body["tool_choice"] = _tool_choice(data["tool_choice"])
    max_tokens = data.get("max_output_tokens")
    if max_tokens is not None:
        if not is_int(max_tokens) or not 1 <= max_tokens <= limits.max_tokens:
            raise BadRequest(f'"max_output_tokens" must be a whole number from 1 to {limits.max_tokens}.')
        body["max_tokens"] = max_tokens
    body.update(_reasoning(data.get("reasoning")))
    response_format = _text_format(data.get("text"))
    if response_format is not None:
        body["response_format"] = response_format
    try:
        chat = parse_chat_request(body, limits, defaults)
    except BadRequest as exc:  # the chat API's sentence, in the words of the body the client sent
        raise BadRequest(_in_input_terms(str(exc), sources), exc.status, exc.code) from None
    echo = {
        "instructions": data.get("instructions") if isinstance(data.get("instructions"), str) else None,
        "max_output_tokens": max_tokens,
        "parallel_tool_calls": chat.tools.parallel,
        "temperature": chat.config.temperature,
        "top_p": chat.config.top_p,
        "tool_choice": data.get("tool_choice", "auto"),
        "tools": data.get("tools") or [],
        "text": data.get("text") or {"format": {"type": "text"}},
        "reasoning": data.get("reasoning") or {},
        "metadata": data.get("metadata") if isinstance(data.get("metadata"), dict) else {},
    }
    return ResponsesRequest(chat, frozenset(custom), namespaces, echo)


def _in_input_terms(sentence: str, sources: list[str]) -> str:
    """A chat refusal's `messages[k]` as the instructions or input item that message came from."""

    def source(found: re.Match) -> str:
        where = sources[int(found.group(1))]
        whole = where in ("instructions", '"input"')  # a string, not an item with content
        return where + ("" if whole else found.group(2) or "")

    sentence = re.sub(r"messages\[(\d+)\](\.content)?", source, sentence)
    return sentence.replace('"messages"', '"input"')


def _log(line: str) -> None:
    print(f"SpecChat API: {line}", file=sys.stderr, flush=True)


# -- tools ------------------------------------------------------------------------------------------------------


def _tools(value: Any) -> tuple[list[dict], set[str], dict[str, str]]:
    """The chat API's tools for Responses' `tools`, the names of the custom ones, and each namespaced function's
    namespace."""
    if value is None:
        return [], set(), {}
    if not isinstance(value, list):
        raise BadRequest('"tools" must be a list of tool objects.')
    tools: list[dict] = []
    custom: set[str] = set()
    namespaces: dict[str, str] = {}
    skipped: list[str] = []
    for i, tool in enumerate(value):
        kind = tool.get("type") if isinstance(tool, dict) else None
        if not isinstance(kind, str):
            raise BadRequest(f'tools[{i}] must be an object with a "type".')
        if kind == "function":
            tools.append(_function(tool, f"tools[{i}]"))
        elif kind == "custom":
            tools.append(_custom(tool, f"tools[{i}]"))
            custom.add(tools[-1]["function"]["name"])
        elif kind == "namespace":
            inner = tool.get("tools")
            if not isinstance(tool.get("name"), str) or not isinstance(inner, list):
                raise BadRequest(f'tools[{i}] is a namespace without a "name" and a list of "tools".')
            for k, function in enumerate(inner):
                where = f"tools[{i}].tools[{k}]"
                if not isinstance(function, dict) or function.get("type", "function") != "function":
                    raise BadRequest(f"{where} must be a function.")
                tools.append(_function(function, where))
                namespaces[tools[-1]["function"]["name"]] = tool["name"]
        else:
            skipped.append(kind)
    if skipped:
        _log(f"tools the model cannot call here were not offered to it: {', '.join(sorted(set(skipped)))}.")
    return tools, custom, namespaces


def _function(tool: dict, where: str) -> dict:
    """A Responses function tool (its fields at the top) as the chat API's (under "function")."""
    name = tool.get("name")
    if not isinstance(name, str):
        raise BadRequest(f'{where} must have a "name".')
    function: dict[str, Any] = {"name": name, "description": tool.get("description") or ""}
    if tool.get("parameters") is not None:
        function["parameters"] = tool["parameters"]
    if tool.get("strict") is not None:
        function["strict"] = tool["strict"]
    return {"type": "function", "function": function}


def _custom(tool: dict, where: str) -> dict:
    """A free-form tool as a function whose one string parameter is the whole input; its grammar, if any, is told
    to the model in the description (the engine constrains JSON, not Lark)."""
    name = tool.get("name")
    if not isinstance(name, str):
        raise BadRequest(f'{where} must have a "name".')
    description = tool.get("description") or ""
    if not isinstance(description, str):
        raise BadRequest(f"{where}.description must be a string.")
    form = tool.get("format")
    if isinstance(form, dict) and form.get("type") == "grammar" and isinstance(form.get("definition"), str):
        grammar = form["definition"][:MAX_GRAMMAR_CHARS]
        description += f"\nThe input follows this {form.get('syntax', '')} grammar:\n{grammar}"
    parameters = {
        "type": "object",
        "properties": {CUSTOM_INPUT: {"type": "string", "description": "The tool's whole input, as plain text."}},
        "required": [CUSTOM_INPUT],
    }
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}


def _tool_choice(value: Any) -> Any:
    """Responses' tool_choice as the chat API's: the words as they are, a named function or custom tool as chat
    names a function; a hosted tool or an allowed-tools list leaves the choice to the model."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and value.get("type") in ("function", "custom") and isinstance(value.get("name"), str):
        return {"type": "function", "function": {"name": value["name"]}}
    if isinstance(value, dict) and isinstance(value.get("type"), str):
        _log(f'tool_choice {value["type"]!r} is read as "auto".')
        return "auto"
    raise BadRequest('"tool_choice" must be "none", "auto", "required" or {"type": "function", "name": ...}.')


# -- settings ---------------------------------------------------------------------------------------------------


def _reasoning(value: Any) -> dict:
    """The chat API's thinking fields for Responses' `reasoning` ({"effort", "summary"})."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest('"reasoning" must be an object such as {"effort": "medium"}.')
    effort = value.get("effort")
    if effort is None:
        return {}
    if effort == "none":
        return {"chat_template_kwargs": {"enable_thinking": False}}
    if effort not in EFFORTS:
        raise BadRequest('"reasoning.effort" must be one of none, ' + ", ".join(EFFORTS) + ".")
    return {"reasoning_effort": EFFORTS[effort]}


def _text_format(value: Any) -> Optional[dict]:
    """The chat API's response_format for Responses' `text.format` (its schema's fields at the top)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise BadRequest('"text" must be an object such as {"format": {"type": "text"}}.')
    form = value.get("format")
    if form is None:
        return None
    kind = form.get("type") if isinstance(form, dict) else None
    if kind in ("text", "json_object"):
        return {"type": kind}
    if kind == "json_schema":
        spec = {"name": form.get("name", "reply"), "schema": form.get("schema"), "strict": form.get("strict")}
        return {"type": "json_schema", "json_schema": spec}
    raise BadRequest('"text.format".type must be "text", "json_object" or "json_schema".')


# -- input items ------------------------------------------------------------------------------------------------


def _messages(value: Any, instructions: Any, custom: set[str], namespaces: dict[str, str]) -> list[dict]:
    """The chat messages for `input` (a string, or a list of items) after `instructions`."""
    messages: list[dict] = []
    if instructions is not None:
        if not isinstance(instructions, str):
            raise BadRequest('"instructions" must be a string.')
        if instructions:
            messages.append({"role": "system", "content": instructions, SOURCE: "instructions"})
    if isinstance(value, str):
        return messages + [{"role": "user", "content": value, SOURCE: '"input"'}]
    if not isinstance(value, list) or not value:
        raise BadRequest('"input" must be a string or a non-empty list of items.')
    reasoning = ""  # a reasoning item's text, for the assistant turn that follows it
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise BadRequest(f"{where} must be an object.")
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({**_message(item, where), SOURCE: where})
        elif kind == "reasoning":
            reasoning += _reasoning_text(item, where)
            continue
        elif kind in ("function_call", "custom_tool_call"):
            _assistant_turn(messages, where).setdefault("tool_calls", []).append(_call(item, where))
        elif kind in ("function_call_output", "custom_tool_call_output"):
            messages.append({"role": "tool", "tool_call_id": _text_field(item, "call_id", where), SOURCE: where})
            messages[-1]["content"] = _output_text(item.get("output"), where)
        elif kind == "item_reference":
            raise BadRequest(STATELESS.format(what=f"a reference ({where})"))
        else:
            raise BadRequest(f"{where} has the type {kind!r}, which this server does not read.")
        if reasoning and messages[-1]["role"] == "assistant":
            messages[-1]["reasoning_content"] = reasoning
        reasoning = ""
    return messages


def _message(item: dict, where: str) -> dict:
    role = item.get("role")
    if role not in ROLES:
        raise BadRequest(f"{where}.role must be one of {', '.join(ROLES)}.")
    content = item.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        raise BadRequest(f"{where}.content must be a string or a list of parts.")
    parts: list[dict] = []
    for k, part in enumerate(content):
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text", "text", "refusal"):
            parts.append({"type": "text", "text": part.get("text", part.get("refusal"))})
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append({"type": "image_url", "image_url": {"url": part["image_url"]}})
        elif kind == "input_image":
            raise BadRequest(f'{where}.content[{k}] names no "image_url"; this server reads pictures by URL only.')
        else:
            raise BadRequest(f"{where}.content[{k}] has the type {kind!r}; this server reads text and pictures.")
    return {"role": role, "content": parts}


def _assistant_turn(messages: list[dict], where: str) -> dict:
    """The assistant turn a call belongs to: the last message when it is the assistant's, else a new one."""
    if not messages or messages[-1]["role"] != "assistant":
        messages.append({"role": "assistant", "content": None, SOURCE: where})
    return messages[-1]


def _call(item: dict, where: str) -> dict:
    """A function_call or custom_tool_call item as a chat tool call (a custom call's input as its one argument)."""
    name = _text_field(item, "name", where)
    call_id = _text_field(item, "call_id", where)
    if item.get("type") == "custom_tool_call":
        arguments = json.dumps({CUSTOM_INPUT: _text_field(item, "input", where, empty=True)}, ensure_ascii=False)
    else:
        arguments = _text_field(item, "arguments", where, empty=True) or "{}"
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def _reasoning_text(item: dict, where: str) -> str:
    """A reasoning item's text: its content (reasoning_text parts), else its summary (summary_text parts)."""
    texts: list[str] = []
    for name in ("content", "summary"):
        parts = item.get(name) or []
        if not isinstance(parts, list):
            raise BadRequest(f"{where}.{name} must be a list of text parts.")
        texts = [p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str)]
        if texts:
            break
    return "\n".join(texts)


def _output_text(value: Any, where: str) -> str:
    """A tool's output: a string, or a list of parts whose text is kept (a picture becomes a note that it was)."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        texts = []
        for part in value:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
            elif isinstance(part, dict) and part.get("type") == "input_image":
                texts.append("[a picture]")
        return "\n".join(texts)
    raise BadRequest(f"{where}.output must be a string or a list of parts.")


def _text_field(item: dict, name: str, where: str, empty: bool = False) -> str:
    value = item.get(name)
    if not isinstance(value, str) or not (value or empty):
        raise BadRequest(f'{where} needs "{name}" as a string.')
    return value
