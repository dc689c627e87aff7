"""What a server's reply stream may carry, checked once where it enters the app: valid text, counters clamped to
what the request allows, and one sentence for an event of the wrong shape.

Everything past this module (the provenance rebuild, the engine's stats, the window, the CLI) reads these records,
never the server's JSON: a string where a number belongs, a counter of ten million for a 16-token request, a lone
surrogate ("\\ud800" is valid JSON but not text) or a list where an object belongs cannot reach them.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Optional

from app.common.text import printable, valid_text

# llama-server drafts at most --spec-draft-n-max tokens a round (SpecChat's own cap is far below this): a round's
# drafted count above it is a server's error, not a draft.
MAX_DRAFT_PER_ROUND = 256
# Prompt sizes, cache hits and times are shown, never looped over: any non-negative value up to these is kept.
MAX_PROMPT_TOKENS = 1 << 24
MAX_SECONDS = 7 * 24 * 3600.0
MAX_TOKENS_PER_SECOND = 1e7

_SPACES = re.compile(r"\s+")
# Where servers put a thinking model's reasoning, beside `content`: `reasoning_content` (llama-server's deepseek
# format, SGLang, LM Studio, vLLM until its rename of late 2025: vllm-project/vllm#27752) and `reasoning` (vLLM
# since, OpenRouter, Ollama). A server in transition sends both with the same text: the first that holds text is
# read, never both.
REASONING_FIELDS = ("reasoning_content", "reasoning")


class MalformedEvent(ValueError):
    """An event whose JSON does not have the shape of a chat-completion chunk; the message names what is wrong."""


def one_line(text: object, limit: int = 200) -> str:
    """A server's short text (an error message, a model id) as one line of at most `limit` characters: valid text,
    whitespace runs as one space, control and formatting characters (escape sequences, bidi overrides) shown
    escaped by the one gate for text shown (app.common.text.printable)."""
    cleaned = printable(_SPACES.sub(" ", valid_text(str(text))).strip(), name=True)
    return cleaned[:limit] + ("…" if len(cleaned) > limit else "")


@dataclass(frozen=True)
class ServerTimings:
    """llama-server's per-chunk `timings`, clamped. `predicted_n` None: the chunk carries no token count."""

    predicted_n: Optional[int] = None
    draft_n: int = 0
    draft_n_accepted: int = 0
    predicted_per_second: float = 0.0
    prompt_n: int = 0
    cache_n: int = 0
    prompt_ms: float = 0.0


@dataclass(frozen=True)
class StreamChunk:
    """One event of a chat-completion stream, as the app may use it."""

    text: str = ""
    finish_reason: str = ""
    timings: Optional[ServerTimings] = None
    completion_tokens: Optional[int] = None
    prompt_tokens: Optional[int] = None
    tool_calls: tuple[dict, ...] = ()  # this event's `delta.tool_calls` fragments (OpenAI's framing), as sent
    # The model's thinking in this event (`reasoning_content` or `reasoning`, see REASONING_FIELDS); it comes before
    # the event's `text` where an event holds both.
    reasoning: str = ""
    reasoning_tokens: Optional[int] = None  # usage.completion_tokens_details.reasoning_tokens, where sent


def _count(value: object, upper: int) -> Optional[int]:
    """A counter as an int in 0..upper; None for anything that is not a finite number (a string, a bool, null).
    A float is truncated and a negative count is 0: the server's arithmetic, not a reason to lose the reply."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        value = int(value)
    return max(0, min(value, upper))


def _amount(value: object, upper: float) -> float:
    """A non-negative finite number up to `upper` (a time, a speed); 0.0 for anything else."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return 0.0
    return max(0.0, min(float(value), upper))


def parse_timings(timings: object, max_tokens: int) -> Optional[ServerTimings]:
    """`timings` clamped to what a request for `max_tokens` tokens allows; None when it is not an object."""
    if not isinstance(timings, dict):
        return None
    predicted = _count(timings.get("predicted_n"), max_tokens)
    drafted = _count(timings.get("draft_n"), max_tokens * MAX_DRAFT_PER_ROUND) or 0
    # An accepted draft is a token of the reply, and it was drafted first.
    accepted = min(_count(timings.get("draft_n_accepted"), max_tokens) or 0, drafted)
    return ServerTimings(
        predicted_n=predicted,
        draft_n=drafted,
        draft_n_accepted=accepted,
        predicted_per_second=_amount(timings.get("predicted_per_second"), MAX_TOKENS_PER_SECOND),
        prompt_n=_count(timings.get("prompt_n"), MAX_PROMPT_TOKENS) or 0,
        cache_n=_count(timings.get("cache_n"), MAX_PROMPT_TOKENS) or 0,
        prompt_ms=_amount(timings.get("prompt_ms"), MAX_SECONDS * 1000.0),
    )


def parse_chunk(event: object, max_tokens: int) -> StreamChunk:
    """One decoded event of the stream as a StreamChunk. Raises MalformedEvent when its shape is wrong: not an
    object, `choices` not a list, a choice or `delta` not an object, `content` not a string."""
    if not isinstance(event, dict):
        raise MalformedEvent(f"a JSON {_kind(event)} where an object belongs")
    choices = event.get("choices")
    if choices is None:
        choices = []
    if not isinstance(choices, list):
        raise MalformedEvent(f'"choices" is a JSON {_kind(choices)}, not a list')
    text, finish, reasoning = "", "", ""
    calls: tuple[dict, ...] = ()
    if choices:
        choice = choices[0]
        if not isinstance(choice, dict):
            raise MalformedEvent(f"a choice is a JSON {_kind(choice)}, not an object")
        delta = choice.get("delta")
        if delta is None:
            # A server that answers a stream with whole messages (one event holding `message`) is read the same way.
            delta = choice.get("message")
        if delta is None:
            delta = {}
        if not isinstance(delta, dict):
            raise MalformedEvent(f'"delta" is a JSON {_kind(delta)}, not an object')
        content = delta.get("content")
        if content is not None and not isinstance(content, str):
            raise MalformedEvent(f'"content" is a JSON {_kind(content)}, not a string')
        text = valid_text(content or "")
        reasoning = _reasoning(delta)
        fragments = delta.get("tool_calls")
        calls = tuple(f for f in fragments if isinstance(f, dict)) if isinstance(fragments, list) else ()
        reason = choice.get("finish_reason")
        finish = one_line(reason, 40) if isinstance(reason, str) else ""
    usage = event.get("usage")
    usage = usage if isinstance(usage, dict) else {}
    details = usage.get("completion_tokens_details")
    details = details if isinstance(details, dict) else {}
    return StreamChunk(
        text=text,
        finish_reason=finish,
        timings=parse_timings(event.get("timings"), max_tokens),
        completion_tokens=_count(usage.get("completion_tokens"), max_tokens),
        prompt_tokens=_count(usage.get("prompt_tokens"), MAX_PROMPT_TOKENS),
        tool_calls=calls,
        reasoning=reasoning,
        reasoning_tokens=_count(details.get("reasoning_tokens"), max_tokens),
    )


def _reasoning(delta: dict) -> str:
    """The event's reasoning text. A value that is not a string (null, an object of a format we do not know) is no
    reasoning: the answer beside it still counts, so it is not a reason to stop the reply."""
    for name in REASONING_FIELDS:
        value = delta.get(name)
        if isinstance(value, str) and value:
            return valid_text(value)
    return ""


def _kind(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    return {dict: "object", list: "list", str: "string", int: "number", float: "number", type(None): "null"}.get(
        type(value), type(value).__name__
    )
