"""OpenAI-style request bodies read into what the engine runs, every bad value refused with one sentence.

Fields that change nothing a client could notice (user, metadata, store) are ignored; fields whose meaning we
cannot honour (n > 1, pictures by http(s) URL, logit_bias, llama-server's other samplers) are refused with a sentence naming the
field, so a client never gets a reply that silently differs from what it asked for. Tools are read in tool_requests.py, the thinking
settings in reasoning_requests.py, and each field's JSON type strictly in field_types.py.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from app.engine.config import GenerationConfig
from app.serve.errors import BadRequest
from app.serve.field_types import INT64_MAX, flag, is_int, number, whole
from app.serve.pictures.parts import image_part
from app.serve.reasoning_requests import thinking_settings
from app.serve.tool_requests import ToolRequest, assistant_calls, parse_tool_request, tool_message

__all__ = ["BadRequest"]

ROLES = ("system", "user", "assistant", "tool")
# OpenAI's newer name for the system role.
ROLE_ALIASES = {"developer": "system"}
MAX_STOP_STRINGS = 4
MAX_STOP_CHARS = 200


@dataclass(frozen=True)
class ApiLimits:
    """What one server accepts: bounded so one client cannot take the machine's memory or the queue."""

    max_body_bytes: int = 4 * 1024 * 1024
    max_tokens: int = 4096  # the most a request may ask for, and what it gets when it does not say
    max_queued: int = 8  # requests waiting behind the one being answered
    # Pictures named by an http(s) URL are fetched by the server (serve --fetch-image-urls); off, they get a 400.
    fetch_image_urls: bool = False
    # Hosts a picture's URL may name although they are on this machine or a private network (serve
    # --image-url-hosts); others with such addresses are refused (app.serve.pictures.fetch).
    image_url_hosts: tuple[str, ...] = ()
    image_fetch_s: float = 30.0  # all of one request's pictures by URL, every redirect, connect and read


@dataclass(frozen=True)
class ApiOptions:
    """What one API server is: where it listens, its key, its limits, and how its replies speculate."""

    host: str = "127.0.0.1"
    port: int = 1234
    api_key: Optional[str] = field(default=None, repr=False)  # a secret: never in a repr or a log line
    # Further keys (serve --api-key given more than once), each a client of its own: what the server keeps from one
    # key's requests (KV states and their cached_tokens, an own history) is offered only to the same key's.
    more_keys: tuple[str, ...] = field(default=(), repr=False)
    limits: ApiLimits = ApiLimits()
    # Sampling defaults and speculation of every reply (a request may set its own sampling, never speculation).
    defaults: GenerationConfig = GenerationConfig(session="api", history=False)

    @property
    def keys(self) -> tuple[str, ...]:
        """Every key a client may send (none: no key is asked for)."""
        return ((self.api_key,) if self.api_key else ()) + self.more_keys


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion as the engine runs it."""

    messages: tuple[dict, ...]
    config: GenerationConfig
    stream: bool = False
    model: str = ""
    stop: tuple[str, ...] = ()
    timings_per_token: bool = False  # llama-server's field: send `timings` with every chunk
    include_usage: bool = False  # stream_options.include_usage: a last chunk with the token counts
    tools: ToolRequest = ToolRequest()
    count_only: bool = False  # the prompt's tokens are counted and nothing is written (/v1/messages/count_tokens)


def api_history(own: bool) -> dict:
    """GenerationConfig's history fields for API clients: none, or their own history book; never the person's,
    whose chats a client could otherwise probe token by token through provenance or speed."""
    return {"history": True, "history_book": "api"} if own else {"history": False}


def parse_chat_request(data: dict, limits: ApiLimits, defaults: GenerationConfig) -> ChatRequest:
    """A /v1/chat/completions body, checked. `defaults` says how this server speculates. Raises BadRequest."""
    messages = _messages(data.get("messages"), limits.fetch_image_urls)
    tools = parse_tool_request(data)
    common = common_fields(data, limits, defaults)
    if tools.response_format != "text":
        schema = tools.json_schema if tools.json_schema is not None else {"type": "object"}
        common["config"] = replace(common["config"], json_schema=json.dumps(schema))
    if tools.offered:
        forced = {"required": "required", "function": tools.function}.get(tools.choice, "")
        common["config"] = replace(common["config"], tools=json.dumps(list(tools.offered)), tool_choice=forced)
    logprobs = flag(data, "logprobs")
    top = whole(data, "top_logprobs", None, 0, MAX_TOP_LOGPROBS)
    if top and not logprobs:
        raise BadRequest('"top_logprobs" needs "logprobs": true.')
    if logprobs:
        common["config"] = replace(common["config"], logprobs=True, top_logprobs=int(top or 0))
    return ChatRequest(messages=messages, tools=tools, **common)


# Fields a client may send whose effect this server does not give, refused when they ask for more than the default
# (OpenAI's, then llama-server's own samplers).
NOT_HONOURED: dict[str, tuple] = {
    "logit_bias": (None, {}),
    "prediction": (None,),
    "audio": (None,),
    "modalities": (None, ["text"]),
    "best_of": (None, 1),
    "n_probs": (None, 0),
    "typical_p": (None, 1, 1.0),
    "mirostat": (None, 0),
    "dry_multiplier": (None, 0, 0.0),
    "xtc_probability": (None, 0, 0.0),
    "grammar": (None, ""),
    "tfs_z": (None, 1, 1.0),
    "top_n_sigma": (None, -1, -1.0),
    "dynatemp_range": (None, 0, 0.0),
    "json_schema": (None,),  # llama-server's; chat takes OpenAI's response_format
}
# The most likeliest tokens a position's log-probabilities list (OpenAI's limit).
MAX_TOP_LOGPROBS = 20
# top_k past any vocabulary is off; the widest a C int holds, as llama.cpp and other servers read it.
MAX_TOP_K = 2**31 - 1


def _refuse_not_honoured(data: dict) -> None:
    for name, fine in NOT_HONOURED.items():
        value = data.get(name)
        if not any(value == f and type(value) is type(f) or value is f for f in fine):
            raise BadRequest(f'"{name}" is not supported by this server; leave it out.')


def common_fields(data: dict, limits: ApiLimits, defaults: GenerationConfig) -> dict[str, Any]:
    _refuse_not_honoured(data)
    n = data.get("n")
    if n is not None and (not is_int(n) or n != 1):  # true and 1.0 are no 1
        raise BadRequest('"n" must be 1: this server writes one reply per request.')
    max_tokens = data.get("max_completion_tokens", data.get("max_tokens"))
    if max_tokens is None:
        max_tokens = limits.max_tokens
    elif not is_int(max_tokens) or max_tokens < 1:
        raise BadRequest('"max_tokens" must be a whole number of 1 or more.')
    elif max_tokens > limits.max_tokens:
        raise BadRequest(
            f'"max_tokens" is {max_tokens}; this server writes at most {limits.max_tokens} tokens per reply.'
        )
    temperature = number(data, "temperature", defaults.temperature, 0.0, 2.0)
    presence = number(data, "presence_penalty", 0.0, -2.0, 2.0)
    frequency = number(data, "frequency_penalty", 0.0, -2.0, 2.0)
    repeat = number(data, "repeat_penalty", 1.0, 0.0, 10.0)
    if repeat == 0.0:
        raise BadRequest('"repeat_penalty" must be above 0 (1 is off).')
    top_p = number(data, "top_p", defaults.top_p, 0.0, 1.0)
    min_p = number(data, "min_p", defaults.min_p, 0.0, 1.0)
    top_k = whole(data, "top_k", defaults.top_k, 0, MAX_TOP_K, " (0 is off)")
    seed = whole(data, "seed", None, 0, INT64_MAX)
    stream = flag(data, "stream")
    ignore_eos = flag(data, "ignore_eos")  # llama-server's: write max_tokens whatever the model says
    options = data.get("stream_options") or {}
    if not isinstance(options, dict):
        raise BadRequest('"stream_options" must be an object.')
    model = data.get("model", "")
    if not isinstance(model, str):
        raise BadRequest('"model" must be a string.')
    config = GenerationConfig(
        max_tokens=int(max_tokens),
        temperature=temperature,
        top_k=int(top_k or 0),
        top_p=top_p,
        min_p=min_p,
        seed=seed,
        speculative=defaults.speculative,
        drafter=defaults.drafter,
        draft_max=defaults.draft_max,
        draft_p_min=defaults.draft_p_min,
        session=defaults.session,
        history=defaults.history,
        history_book=defaults.history_book,
        client=defaults.client,
        presence_penalty=presence,
        frequency_penalty=frequency,
        repeat_penalty=repeat,
        ignore_eos=ignore_eos,
        **thinking_settings(data, defaults),
    )
    return {
        "config": config,
        "stream": stream,
        "model": model,
        "stop": _stop(data.get("stop")),
        "timings_per_token": flag(data, "timings_per_token"),
        "include_usage": flag(options, "include_usage", shown="stream_options.include_usage"),
    }


def _messages(value: Any, fetch_urls: bool = False) -> tuple[dict, ...]:
    if not isinstance(value, list) or not value:
        raise BadRequest('"messages" must be a non-empty list of {"role", "content"} objects.')
    out = []
    for i, message in enumerate(value):
        if not isinstance(message, dict):
            raise BadRequest(f'messages[{i}] must be an object with "role" and "content".')
        role = message.get("role")
        role = ROLE_ALIASES.get(role, role) if isinstance(role, str) else role
        if role not in ROLES:
            raise BadRequest(f"messages[{i}].role must be one of {', '.join(ROLES)}.")
        entry = {"role": role, "content": _content(message.get("content"), i, role, fetch_urls)}
        if role == "tool":
            entry.update(tool_message(message, i))
        calls = assistant_calls(message, i) if role == "assistant" else []
        if calls:
            entry["tool_calls"] = calls
        reasoning = _reasoning(message, i) if role == "assistant" else ""
        if reasoning:
            entry["reasoning_content"] = reasoning  # the name the chat templates read (Qwen3's, GLM's)
        out.append(entry)
    if out[-1]["role"] == "assistant" and not out[-1]["content"] and not out[-1].get("tool_calls"):
        out.pop()  # an empty assistant turn to be filled is what the reply is anyway
    if not out:
        raise BadRequest('"messages" holds nothing to answer.')
    return tuple(out)


def _content(value: Any, index: int, role: str, fetch_urls: bool = False) -> str | list[dict]:
    """A message's text; with pictures (image_url parts, a user's only), its parts in order."""
    if (
        isinstance(value, list)
        and role == "user"
        and any(isinstance(p, dict) and p.get("type") == "image_url" for p in value)
    ):
        parts: list[dict] = []
        for part in value:
            if isinstance(part, dict) and part.get("type") == "image_url":
                parts.append(image_part(part, index, fetch_urls))
            else:
                text = _text([part], index, role)
                if text:
                    parts.append({"type": "text", "text": text})
        return parts
    return _text(value, index, role)


def _text(value: Any, index: int, role: str) -> str:
    if isinstance(value, str):
        text = value
    elif value is None and role == "assistant":
        text = ""
    elif isinstance(value, list):
        parts = []
        for part in value:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and part.get("type") == "text" and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise BadRequest(
                    f"messages[{index}].content has a part of type {kind!r}; only text and image_url "
                    "(in a user's message) are supported."
                )
        text = "".join(parts)
    else:
        raise BadRequest(f"messages[{index}].content must be a string or a list of text parts.")
    if "\x00" in text:
        raise BadRequest(f"messages[{index}].content holds a NUL character.")
    return text


def _reasoning(message: dict, index: int) -> str:
    """An earlier reply's thinking, as a client sends it back (`reasoning_content`, or `reasoning` as vLLM and
    OpenRouter name it); the template decides whether the model sees it again."""
    for name in ("reasoning_content", "reasoning"):
        value = message.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise BadRequest(f"messages[{index}].{name} must be a string.")
        if "\x00" in value:
            raise BadRequest(f"messages[{index}].{name} holds a NUL character.")
        if value:
            return value
    return ""


def _stop(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(s, str) for s in items):
        raise BadRequest('"stop" must be a string or a list of strings.')
    items = [s for s in items if s]
    if len(items) > MAX_STOP_STRINGS or any(len(s) > MAX_STOP_CHARS for s in items):
        raise BadRequest(f'"stop" takes at most {MAX_STOP_STRINGS} strings of up to {MAX_STOP_CHARS} characters.')
    return tuple(items)
