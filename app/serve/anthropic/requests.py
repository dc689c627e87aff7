"""Anthropic's Messages bodies (/v1/messages and /v1/messages/count_tokens) read into the ChatRequest the engine runs.

A body is rewritten into the OpenAI chat body that app.serve.requests already checks field by field (the same
tool, picture, thinking and sampling checks, one sentence per refusal); what only Anthropic's shape has is read
here: content blocks, `system` as a string or blocks, `tool_use` / `tool_result`, `tool_choice`'s words, `thinking`
and `stop_sequences`.

The prompt is kept cacheable across an agent's requests (the engine reuses the KV cache of the longest prefix it has
seen): Claude Code's billing line, whose hash changes every request, is dropped from `system`, and a `role:
"system"` message inside `messages` (chat templates refuse a system message that is not first) becomes a
`<system-reminder>` in a user turn that does not move: the one right before it, else the one after it, else a user
turn of its own. A countdown Claude Code may put in the system prompt (`<total_tokens>N tokens left</total_tokens>`)
is moved the same way, as a system message after the last turn. Fields that change nothing here (`metadata`, `cache_control`, `context_management`, `service_tier`,
`output_config`) are accepted and ignored.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

from app.engine.config import GenerationConfig
from app.serve.errors import BadRequest
from app.serve.field_types import flag
from app.serve.requests import ApiLimits, ChatRequest, parse_chat_request

# What Claude Code may add to its system prompt: the tokens its context has left, a number that changes every request.
COUNTDOWN = re.compile(r"<total_tokens>[^<]*</total_tokens>")
# The first system block Claude Code sends: its hash changes every request, so it would end the cached prefix.
BILLING_PREFIX = "x-anthropic-billing-header:"
# Anthropic's limit on stop_sequences is higher than the OpenAI shape's; this server holds this many back at once.
MAX_STOP_SEQUENCES = 4
# What `thinking.type` may be: "enabled" (with a budget), "disabled", or "adaptive" (the model's own default).
THINKING_TYPES = ("enabled", "disabled", "adaptive")


def parse_messages_request(
    data: dict, limits: ApiLimits, defaults: GenerationConfig, count_only: bool = False
) -> ChatRequest:
    """A /v1/messages body (or with `count_only`, a /v1/messages/count_tokens one), checked. Raises BadRequest."""
    system, countdown = _countdown_apart(_system(data.get("system")))
    body: dict[str, Any] = {"messages": _messages(data.get("messages"), system, countdown)}
    model = data.get("model")
    if not count_only and model is None:
        raise BadRequest('"model" is required.')
    body["model"] = model if model is not None else ""
    max_tokens = data.get("max_tokens")
    if count_only:
        max_tokens = 1
    elif max_tokens is None:
        raise BadRequest('"max_tokens" is required: the most tokens the reply may take.')
    elif isinstance(max_tokens, int) and not isinstance(max_tokens, bool) and max_tokens > limits.max_tokens:
        # Agents ask for far more than a local model writes in one go (Claude Code asks for 64000): the reply
        # stops at this server's limit with stop_reason "max_tokens" instead of being refused.
        max_tokens = limits.max_tokens
    body["max_tokens"] = max_tokens
    for name in ("temperature", "top_p", "top_k", "stream"):
        if data.get(name) is not None:
            body[name] = data[name]
    if count_only:
        body.pop("stream", None)
    body["stop"] = _stop_sequences(data.get("stop_sequences"))
    tools = _tools(data.get("tools"))
    if tools:
        body["tools"] = tools
    body.update(_tool_choice(data.get("tool_choice"), bool(tools)))
    body.update(_thinking(data.get("thinking")))
    request = parse_chat_request(body, limits, defaults)
    return replace(request, count_only=True) if count_only else request


def _system(value: Any) -> str:
    """The top-level `system`: a string, or text blocks joined with blank lines (the billing line dropped)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return "\n\n".join(t for t in _text_blocks(value, '"system"') if not t.startswith(BILLING_PREFIX))


def _countdown_apart(system: str) -> tuple[str, str]:
    """The system prompt without its countdown blocks (`<total_tokens>N tokens left</total_tokens>`, whose N
    changes every request), and those blocks, which go at the end of the last user turn instead."""
    blocks = COUNTDOWN.findall(system)
    return (COUNTDOWN.sub("", system).strip(), "\n".join(blocks)) if blocks else (system, "")


def _text_blocks(value: Any, where: str) -> list[str]:
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        raise BadRequest(f"{where} must be a string or a list of text blocks.")
    out = []
    for i, block in enumerate(value):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise BadRequest(f'{where}[{i}] must be a {{"type": "text", "text": ...}} block.')
        out.append(block["text"])
    return out


def _messages(value: Any, system: str, countdown: str = "") -> list[dict]:
    """Anthropic's messages (with the top-level system text, and the countdown taken out of it) as OpenAI's."""
    if not isinstance(value, list) or not value:
        raise BadRequest('"messages" must be a non-empty list of {"role", "content"} objects.')
    turns: list[tuple[str, Any]] = []
    for i, message in enumerate(value):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant", "system"):
            raise BadRequest(f'messages[{i}] must be an object whose "role" is "user", "assistant" or "system".')
        content = message.get("content")
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise BadRequest(f"messages[{i}].content must be a string or a list of content blocks.")
        turns.append((message["role"], content))
    if countdown:
        turns.append(("system", [{"type": "text", "text": countdown}]))
    turns = _system_turns_placed(turns)
    if turns and turns[0][0] == "system":
        system = "\n\n".join(t for t in (system, *_text_blocks(turns.pop(0)[1], "messages[0].content")) if t)
    out: list[dict] = [{"role": "system", "content": system}] if system else []
    for i, (role, content) in enumerate(turns):
        out += _user_turn(content, i) if role == "user" else [_assistant_turn(content, i)]
    return out


def _system_turns_placed(turns: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """A system message after the first turn, merged into a user turn that stays where it is in later requests:
    the user turn right before it, else the one right after it, else a user turn of its own (a leading one stays
    the system prompt)."""
    out: list[tuple[str, list]] = []
    waiting: list[dict] = []  # reminders for the next user turn
    for index, (role, content) in enumerate(turns):
        if role == "system" and out:
            reminder = {"type": "text", "text": _reminder(content, index)}
            if out[-1][0] == "user":
                out[-1] = ("user", [*out[-1][1], reminder])
            else:
                waiting.append(reminder)
            continue
        if role == "user" and waiting:
            content, waiting = [*waiting, *content], []
        elif waiting:
            out.append(("user", waiting))
            waiting = []
        out.append((role, content))
    if waiting:
        out.append(("user", waiting))
    return out


def _reminder(content: list, index: int) -> str:
    text = "\n\n".join(_text_blocks(content, f"messages[{index}].content"))
    return f"\n<system-reminder>\n{text}\n</system-reminder>\n"


def _user_turn(content: list, index: int) -> list[dict]:
    """A user turn: its tool results as `tool` messages (first, as they answer the calls before), then its text and
    pictures as one user message."""
    results: list[dict] = []
    parts: list[dict] = []
    for k, block in enumerate(content):
        where = f"messages[{index}].content[{k}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "tool_result":
            results.append(_tool_result(block, where))
        elif kind == "text" and isinstance(block.get("text"), str):
            parts.append({"type": "text", "text": block["text"]})
        elif kind == "image":
            parts.append(_image(block, where))
        else:
            raise BadRequest(f"{where} has a block of type {kind!r}; a user turn takes text, image and tool_result.")
    out = list(results)
    if parts or not results:
        only_text = all(p["type"] == "text" for p in parts)
        out.append({"role": "user", "content": "".join(p["text"] for p in parts) if only_text else parts})
    return out


def _tool_result(block: dict, where: str) -> dict:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise BadRequest(f'{where} is a tool_result without a "tool_use_id".')
    content = block.get("content", "")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        texts = []
        for block_part in content:
            kind = block_part.get("type") if isinstance(block_part, dict) else None
            if kind == "text" and isinstance(block_part.get("text"), str):
                texts.append(block_part["text"])
            elif kind == "image":
                # A chat template's tool message holds text only: the model is told a picture was there.
                texts.append("[a picture the tool returned, which this server cannot show the model]")
            else:
                raise BadRequest(f"{where}.content has a block of type {kind!r}; a tool_result takes text and image.")
        text = "\n".join(texts)
    else:
        raise BadRequest(f"{where}.content must be a string or a list of text blocks.")
    if flag(block, "is_error", shown=f"{where}.is_error"):
        text = f"Error: {text}"
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def _image(block: dict, where: str) -> dict:
    """An image block as OpenAI's image_url part (a base64 source as a data: URL); the URL checks are image_parts'."""
    source = block.get("source")
    if not isinstance(source, dict):
        source = {}
    kind = source.get("type")
    if kind == "base64" and isinstance(source.get("media_type"), str) and isinstance(source.get("data"), str):
        return {"type": "image_url", "image_url": {"url": f"data:{source['media_type']};base64,{source['data']}"}}
    if kind == "url" and isinstance(source.get("url"), str):
        return {"type": "image_url", "image_url": {"url": source["url"]}}
    raise BadRequest(f'{where}.source must be {{"type": "base64", "media_type", "data"}} or {{"type": "url", "url"}}.')


def _assistant_turn(content: list, index: int) -> dict:
    """An assistant turn: its text, its thinking (replayed; its signature is not checked) and its tool calls."""
    texts, thinking, calls = [], [], []
    for k, block in enumerate(content):
        where = f"messages[{index}].content[{k}]"
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            thinking.append(block["thinking"])
        elif kind == "redacted_thinking":
            continue  # another server's sealed thinking: nothing this model can read
        elif kind == "tool_use":
            if not isinstance(block.get("id"), str) or not isinstance(block.get("name"), str):
                raise BadRequest(f'{where} is a tool_use without an "id" and a "name".')
            arguments = block.get("input", {})
            if not isinstance(arguments, dict):
                raise BadRequest(f"{where}.input must be an object.")
            calls.append(
                {"id": block["id"], "type": "function", "function": {"name": block["name"], "arguments": arguments}}
            )
        else:
            raise BadRequest(
                f"{where} has a block of type {kind!r}; an assistant turn takes text, thinking and tool_use."
            )
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts)}
    if calls:
        message["tool_calls"] = calls
    if thinking:
        message["reasoning_content"] = "".join(thinking)
    return message


def _stop_sequences(value: Any) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise BadRequest('"stop_sequences" must be a list of strings.')
    if len([s for s in value if s]) > MAX_STOP_SEQUENCES:
        raise BadRequest(f'"stop_sequences" takes at most {MAX_STOP_SEQUENCES} strings on this server.')
    return value


def _tools(value: Any) -> list[dict]:
    """Anthropic's tools as OpenAI's functions: name, description, input_schema as the parameters. Server tools
    (web search and the like, named by a versioned `type`) run on Anthropic's side; here they are left out."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRequest('"tools" must be a list of {"name", "description", "input_schema"} objects.')
    out = []
    for i, tool in enumerate(value):
        if not isinstance(tool, dict):
            raise BadRequest(f'tools[{i}] must be a {{"name", "description", "input_schema"}} object.')
        if tool.get("type") not in (None, "custom"):
            continue
        function = {"name": tool.get("name"), "parameters": tool.get("input_schema", {"type": "object"})}
        if tool.get("description") is not None:
            function["description"] = tool["description"]
        out.append({"type": "function", "function": function})
    return out


def _tool_choice(value: Any, has_tools: bool) -> dict:
    """`tool_choice` (auto, any, tool, none; disable_parallel_tool_use) as OpenAI's fields."""
    if value is None:
        return {}
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in ("auto", "any", "tool", "none"):
        raise BadRequest('"tool_choice" must be {"type": "auto"}, {"type": "any"}, {"type": "tool", "name"} or none.')
    out: dict[str, Any] = {}
    if has_tools and value.get("disable_parallel_tool_use") is not None:
        out["parallel_tool_calls"] = not flag(value, "disable_parallel_tool_use")
    if kind == "tool":
        if not isinstance(value.get("name"), str):
            raise BadRequest('"tool_choice" of type "tool" needs the tool\'s "name".')
        out["tool_choice"] = {"type": "function", "function": {"name": value["name"]}}
    elif kind == "any":
        out["tool_choice"] = "required"
    elif has_tools or kind == "none":
        out["tool_choice"] = kind
    return out


def _thinking(value: Any) -> dict:
    """`thinking` as the engine's settings: enabled (its budget_tokens the most thinking tokens), disabled, or
    adaptive (the template's own default)."""
    if value is None:
        return {}
    kind = value.get("type") if isinstance(value, dict) else None
    if kind not in THINKING_TYPES:
        raise BadRequest(
            '"thinking" must be {"type": "enabled", "budget_tokens": N}, {"type": "disabled"} or adaptive.'
        )
    if kind == "disabled":
        return {"chat_template_kwargs": {"enable_thinking": False}}
    if kind == "adaptive":
        return {}
    budget = value.get("budget_tokens")
    if budget is not None and (not isinstance(budget, int) or isinstance(budget, bool) or budget < 1):
        raise BadRequest('"thinking.budget_tokens" must be a whole number of 1 or more.')
    out: dict[str, Any] = {"chat_template_kwargs": {"enable_thinking": True}}
    if budget is not None:
        out["thinking_budget_tokens"] = budget
    return out
