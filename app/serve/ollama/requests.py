"""Ollama's /api/chat and /api/generate bodies read into what the engine runs.

Each body is rewritten into the OpenAI body that means the same (messages with their pictures as data: URLs, calls
with their ids, `options` as sampling fields, `think` as OpenRouter's `reasoning`, `format` as `response_format`) and
read by the OpenAI API's own readers (app.serve.requests, app.serve.completions.requests), so both APIs check
and honour a field the same way. /api/generate is a chat turn (a system prompt and the prompt) unless it is `raw`
or has a `suffix`: then it is a text completion, which is how code editors ask for fill-in-the-middle.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any, Callable, Optional

from app.engine.config import GenerationConfig
from app.serve.completions.requests import ApiRequest, parse_completion_request
from app.serve.errors import BadRequest
from app.serve.requests import ApiLimits, ChatRequest, parse_chat_request

# Ollama's sampling options and the OpenAI field each becomes (the same name where none is given).
SAMPLING = {
    "temperature": "temperature",
    "top_p": "top_p",
    "top_k": "top_k",
    "min_p": "min_p",
    "seed": "seed",
    "stop": "stop",
    "repeat_penalty": "repeat_penalty",
    "presence_penalty": "presence_penalty",
    "frequency_penalty": "frequency_penalty",
    "typical_p": "typical_p",  # refused unless off, as for OpenAI's clients
    "mirostat": "mirostat",
    "tfs_z": "tfs_z",
}
# Options that say how Ollama loads or runs a model. SpecChat's model is loaded once with its own settings
# (serve's --ctx-size and the like), so these change nothing and are accepted as Ollama's clients send them.
LOAD_OPTIONS = frozenset(
    {
        "num_ctx",
        "num_batch",
        "num_gpu",
        "main_gpu",
        "num_thread",
        "num_keep",
        "use_mmap",
        "use_mlock",
        "numa",
        "low_vram",
        "f16_kv",
        "vocab_only",
        "logits_all",
        "embedding_only",
        "repeat_last_n",
        "penalize_newline",
        "mirostat_tau",
        "mirostat_eta",
    }
)
EFFORTS = ("low", "medium", "high")
# The OpenAI names a refusal gives, as the Ollama client wrote them.
OLLAMA_NAMES = {
    **{f'"{openai}"': f'"options.{ollama}"' for ollama, openai in SAMPLING.items()},
    '"max_tokens"': '"options.num_predict"',
    "response_format.json_schema.schema": '"format"',
    '"response_format"': '"format"',
}


def chat_request(data: dict, limits: ApiLimits, defaults: GenerationConfig) -> ChatRequest:
    """An /api/chat body, checked. Raises BadRequest."""
    body = {"messages": _messages(data.get("messages")), "tools": data.get("tools"), **_common(data)}
    return _read(parse_chat_request, body, limits, defaults)


def generate_request(data: dict, limits: ApiLimits, defaults: GenerationConfig) -> ApiRequest:
    """An /api/generate body with a prompt, checked. Raises BadRequest."""
    for name in ("template", "context"):
        if data.get(name):
            raise BadRequest(
                f'"{name}" is not supported by this server; leave it out (the model\'s own template is used).'
            )
    prompt = _text(data, "prompt")
    system = _text(data, "system")
    raw = data.get("raw", False)
    if not isinstance(raw, bool):
        raise BadRequest('"raw" must be true or false.')
    suffix = data.get("suffix")
    if raw or suffix:
        if data.get("images"):
            raise BadRequest('"images" need the chat template: leave "raw" and "suffix" out to send pictures.')
        if system:
            raise BadRequest('"system" needs the chat template: leave "raw" out, or write it into the prompt.')
        body = {"prompt": prompt, "suffix": suffix, **_common(data)}
        body.setdefault("max_tokens", limits.max_tokens)  # Ollama writes until the model ends, not 16 tokens
        return _read(parse_completion_request, body, limits, defaults)
    user: dict[str, Any] = {"role": "user", "content": prompt, "images": data.get("images")}
    messages = [{"role": "system", "content": system}] if system else []
    body = {"messages": _messages([*messages, user]), **_common(data)}
    return _read(parse_chat_request, body, limits, defaults)


def _read(parse: Callable[..., ApiRequest], body: dict, limits: ApiLimits, defaults: GenerationConfig) -> Any:
    """`body` read by the OpenAI reader `parse`; its refusal names the fields as the Ollama client wrote them."""
    try:
        return parse(body, limits, defaults)
    except BadRequest as exc:
        message = str(exc)
        for openai, ollama in OLLAMA_NAMES.items():
            message = message.replace(openai, ollama)
        raise BadRequest(message, exc.status) from None


def streams(data: dict) -> bool:
    """Whether the reply streams: Ollama's default is yes."""
    value = data.get("stream", True)
    if value is None:
        return True
    if not isinstance(value, bool):
        raise BadRequest('"stream" must be true or false.')
    return value


def _text(data: dict, name: str) -> str:
    value = data.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadRequest(f'"{name}" must be a string.')
    return value


def _common(data: dict) -> dict[str, Any]:
    """The OpenAI fields of what chat and generate share: model, stream, options, think, format."""
    keep_alive = data.get("keep_alive")
    if keep_alive is not None and not isinstance(keep_alive, (str, int, float)):
        raise BadRequest('"keep_alive" must be a duration ("5m") or a number of seconds.')
    return {
        "model": data.get("model", ""),
        "stream": streams(data),
        **_options(data.get("options")),
        **_think(data.get("think")),
        **_format(data.get("format")),
    }


def _options(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise BadRequest('"options" must be an object such as {"temperature": 0.7, "num_predict": 128}.')
    out: dict[str, Any] = {}
    for name, setting in value.items():
        if name in SAMPLING:
            out[SAMPLING[name]] = setting
        elif name == "num_predict":
            # -1 (until the model ends) and -2 (until the context is full) are the server's own limit here.
            if not (isinstance(setting, int) and not isinstance(setting, bool) and setting in (-1, -2)):
                out["max_tokens"] = setting
        elif name not in LOAD_OPTIONS:
            raise BadRequest(f'"options.{name}" is not an Ollama option this server knows; leave it out.')
    return out


def _think(value: Any) -> dict[str, Any]:
    """Ollama's `think` (true, false or an effort) as OpenRouter's `reasoning`; absent: the model's default."""
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"reasoning": {"enabled": value}}
    if value in EFFORTS:
        return {"reasoning": {"enabled": True, "effort": value}}
    raise BadRequest('"think" must be true, false, "low", "medium" or "high".')


def _format(value: Any) -> dict[str, Any]:
    """Ollama's `format`: "json" (any JSON object) or a JSON schema the reply is decoded under."""
    if value is None or value == "":
        return {}
    if value == "json":
        return {"response_format": {"type": "json_object"}}
    if isinstance(value, dict):
        return {"response_format": {"type": "json_schema", "json_schema": {"name": "format", "schema": value}}}
    raise BadRequest('"format" must be "json" or a JSON schema object.')


def _messages(value: Any) -> list[Any]:
    """Ollama's messages as OpenAI's: pictures as image_url parts, calls with ids, results tied to their calls."""
    if not isinstance(value, list):
        return value  # the OpenAI reader refuses it with its sentence
    out: list[Any] = []
    calls: list[tuple[str, str]] = []  # (id, function name) of the calls made so far, answered or not
    for i, message in enumerate(value):
        if not isinstance(message, dict):
            out.append(message)
            continue
        entry = {key: message[key] for key in ("role", "content") if key in message}
        images = _images(message.get("images"), i)
        if images:
            text = entry.get("content") or ""
            if not isinstance(text, str):
                raise BadRequest(f"messages[{i}].content must be a string.")
            # Before the text, where Ollama puts a message's pictures when it renders the prompt.
            entry["content"] = [*images, {"type": "text", "text": text}] if text else images
        if message.get("thinking"):
            entry["reasoning_content"] = message["thinking"]
        if message.get("tool_calls") is not None:
            entry["tool_calls"] = _calls(message["tool_calls"], i, calls)
        if message.get("role") == "tool":
            entry["tool_call_id"] = _answered(message, i, calls)
            if isinstance(message.get("tool_name"), str):
                entry["name"] = message["tool_name"]
        out.append(entry)
    return out


def _images(value: Any, index: int) -> list[dict]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(image, str) for image in value):
        raise BadRequest(f"messages[{index}].images must be a list of base64 strings.")
    parts = []
    for k, image in enumerate(value):
        try:
            base64.b64decode(image, validate=True)
        except (binascii.Error, ValueError):
            raise BadRequest(f"messages[{index}].images[{k}] is not base64 data.") from None
        parts.append({"type": "image_url", "image_url": {"url": f"data:image;base64,{image}"}})
    return parts


def _calls(value: Any, index: int, calls: list[tuple[str, str]]) -> Any:
    """An assistant's calls, each with an id (Ollama's have none before 0.12) that its result will name."""
    if not isinstance(value, list):
        return value  # refused by the OpenAI reader
    out = []
    for k, call in enumerate(value):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict):
            raise BadRequest(f'messages[{index}].tool_calls[{k}] must be {{"function": {{"name", "arguments"}}}}.')
        call_id = call.get("id") if isinstance(call.get("id"), str) and call.get("id") else f"call_{index}_{k}"
        name = function.get("name")
        calls.append((call_id, name if isinstance(name, str) else ""))
        out.append({"id": call_id, "type": "function", "function": function})
    return out


def _answered(message: dict, index: int, calls: list[tuple[str, str]]) -> str:
    """The id of the call a tool result answers: the oldest unanswered call of its `tool_name` (results come in the
    order of their calls), else the oldest unanswered one."""
    name: Optional[str] = message.get("tool_name") or message.get("name")
    call_id = message.get("tool_call_id")
    if isinstance(call_id, str) and call_id:
        chosen = next((c for c in calls if c[0] == call_id), None)
    else:
        chosen = next((c for c in calls if c[1] == name), calls[0] if calls else None)
    if chosen is None:
        return f"call_{index}"  # a result with no call before it: the template shows it as it is
    calls.remove(chosen)
    return chosen[0]
