"""A /v1/completions body (raw text in, text out, no chat template) read into what the engine runs.

The prompt is a string or token ids (OpenAI also takes a list of one of either; more than one prompt is a batch,
which this server does not write). With `suffix`, the model fills in the middle between the prompt and the suffix
through its own fill-in-the-middle tokens. Sampling, stop strings, penalties and streaming are read as for chat
(requests.common_fields); `logprobs` is a number here, as in OpenAI's completions: how many likeliest tokens each
position lists beside the written one.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional, Union

from app.engine.config import GenerationConfig
from app.serve.errors import BadRequest
from app.serve.field_types import is_int
from app.serve.requests import MAX_TOP_LOGPROBS, ApiLimits, ChatRequest, common_fields
from app.serve.tool_requests import ToolRequest

# OpenAI's default for a completion that does not say how long it may be.
DEFAULT_MAX_TOKENS = 16


@dataclass(frozen=True)
class CompletionRequest:
    """One completion as the engine runs it. Its reply is shaped as chat's is, so it has chat's fields too."""

    prompt: Union[str, tuple[int, ...]]
    config: GenerationConfig
    suffix: Optional[str] = None
    echo: bool = False  # the prompt's text leads the reply's
    logprobs: Optional[int] = None  # None: no log-probabilities; n: each position's n likeliest tokens too
    stream: bool = False
    model: str = ""
    stop: tuple[str, ...] = ()
    timings_per_token: bool = False
    include_usage: bool = False
    tools: ToolRequest = ToolRequest()  # a completion offers none


# What the server answers: a chat completion or a text completion.
ApiRequest = Union[ChatRequest, CompletionRequest]


def parse_completion_request(data: dict, limits: ApiLimits, defaults: GenerationConfig) -> CompletionRequest:
    """A /v1/completions body, checked. Raises BadRequest."""
    prompt = _prompt(data.get("prompt"))
    suffix = data.get("suffix")
    if suffix is not None and not isinstance(suffix, str):
        raise BadRequest('"suffix" must be a string.')
    if isinstance(suffix, str) and "\x00" in suffix:
        raise BadRequest('"suffix" holds a NUL character.')
    echo = data.get("echo", False)
    if not isinstance(echo, bool):
        raise BadRequest('"echo" must be true or false.')
    if echo and not isinstance(prompt, str):
        raise BadRequest('"echo" works with a text prompt only; send the prompt as a string, or leave echo out.')
    if echo and suffix is not None:
        raise BadRequest('"echo" and "suffix" do not go together: a filled-in middle has no prompt before it.')
    logprobs = data.get("logprobs")
    if logprobs is not None and (not is_int(logprobs) or not 0 <= logprobs <= MAX_TOP_LOGPROBS):
        raise BadRequest(f'"logprobs" must be a whole number from 0 to {MAX_TOP_LOGPROBS} (or null).')
    if logprobs is not None and echo:
        raise BadRequest('"echo" with "logprobs" is not supported: the prompt\'s tokens get no log-probabilities here.')
    if data.get("max_tokens") is None and data.get("max_completion_tokens") is None:
        data = {**data, "max_tokens": min(DEFAULT_MAX_TOKENS, limits.max_tokens)}
    common: dict[str, Any] = common_fields(data, limits, defaults)
    # The text is the model's as written: a thinking model's tags stay in it (there is no message to split).
    common["config"] = replace(common["config"], reasoning_format="none")
    if logprobs is not None:
        common["config"] = replace(common["config"], logprobs=True, top_logprobs=int(logprobs))
    # Drafting pays most on predictable text such as code: a completion speculates as the server's chats do.
    return CompletionRequest(prompt=prompt, suffix=suffix, echo=echo, logprobs=logprobs, **common)


def _prompt(value: Any) -> Union[str, tuple[int, ...]]:
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], (str, list)):
        value = value[0]  # a batch of one
    if isinstance(value, str):
        if not value:
            raise BadRequest('"prompt" is empty; there is nothing to continue.')
        if "\x00" in value:
            raise BadRequest('"prompt" holds a NUL character.')
        return value
    if isinstance(value, list) and value and all(is_int(t) for t in value):
        return tuple(value)
    if isinstance(value, list) and len(value) > 1 and all(isinstance(p, (str, list)) for p in value):
        raise BadRequest('"prompt" holds several prompts; this server completes one prompt per request.')
    raise BadRequest('"prompt" must be a non-empty string or a list of token ids.')
