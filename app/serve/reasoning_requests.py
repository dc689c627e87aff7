"""A request's thinking settings, in the fields the servers clients are written for use, read into GenerationConfig.

- `chat_template_kwargs` (vLLM, SGLang, llama-server): the template's variables; its `enable_thinking` is the
  request's Thinking on/off, the rest go to the template as they are.
- `reasoning_effort` (OpenAI, vLLM, llama-server): low, medium or high, for templates that read it (gpt-oss).
- `reasoning` (OpenRouter): `{"effort", "max_tokens", "enabled"}`, the same settings in one object.
- `reasoning_format` (llama-server; Groq's words too): "none" or "raw" keep the thinking and its tags in `content`;
  "deepseek", "auto" or "parsed" send it apart, as `reasoning_content`, which is what a request gets by default.
- `thinking_budget_tokens` or `reasoning_budget_tokens` (llama-server): the most thinking tokens, -1 for no limit
  and 0 for none at all (llama-server closes the thinking at once; here, Thinking off).

A field that is absent keeps the server's default; a value of the wrong kind is refused with a sentence naming it.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from app.engine.config import GenerationConfig
from app.serve.errors import BadRequest

EFFORTS = ("low", "medium", "high")
# reasoning_format's words: llama-server's (none, deepseek, auto) and Groq's (raw, parsed) as GenerationConfig's.
REASONING_FORMATS = {"none": "none", "raw": "none", "deepseek": "split", "auto": "split", "parsed": "split"}
BUDGET_FIELDS = ("thinking_budget_tokens", "reasoning_budget_tokens")
_REASONING_KEYS = ("effort", "max_tokens", "enabled", "exclude")
# The widest budget a C int holds, as llama-server and other servers read it.
MAX_BUDGET = 2**31 - 1


def thinking_settings(data: dict, defaults: GenerationConfig) -> dict[str, Any]:
    """GenerationConfig's thinking fields for the request body `data` (the server's `defaults` where it says
    nothing). Raises BadRequest."""
    thinking: Optional[bool] = defaults.thinking
    effort = defaults.reasoning_effort
    budget = defaults.thinking_budget
    template_kwargs = defaults.template_kwargs
    kwargs = data.get("chat_template_kwargs")
    if kwargs is not None:
        if not isinstance(kwargs, dict):
            raise BadRequest('"chat_template_kwargs" must be an object of the chat template\'s variables.')
        rest = dict(kwargs)
        if "enable_thinking" in rest:
            enable = rest.pop("enable_thinking")
            if not isinstance(enable, bool):
                raise BadRequest('"chat_template_kwargs.enable_thinking" must be true or false.')
            thinking = enable
        template_kwargs = json.dumps(rest, ensure_ascii=False) if rest else ""
    reasoning = data.get("reasoning")
    if reasoning is not None:
        thinking, effort, budget = _openrouter(reasoning, thinking, effort, budget)
    if data.get("reasoning_effort") is not None:
        effort = _effort(data["reasoning_effort"], "reasoning_effort")
    for name in BUDGET_FIELDS:
        if data.get(name) is not None:
            budget, thinking = _budget(data[name], name, thinking)
    return {
        "thinking": thinking,
        "reasoning_effort": effort,
        "thinking_budget": budget,
        "reasoning_format": _format(data.get("reasoning_format"), defaults.reasoning_format),
        "template_kwargs": template_kwargs,
    }


def _effort(value: Any, name: str) -> Any:
    if not isinstance(value, str) or value not in EFFORTS:
        raise BadRequest(f'"{name}" must be "low", "medium" or "high".')
    return value


def _budget(value: Any, name: str, thinking: Optional[bool]) -> tuple[int, Optional[bool]]:
    """(thinking_budget, thinking) for a token budget: -1 no limit, 0 no thinking, N the most thinking tokens."""
    if not isinstance(value, int) or isinstance(value, bool) or not -1 <= value <= MAX_BUDGET:
        raise BadRequest(
            f'"{name}" must be a whole number: -1 (no limit), 0 (no thinking) or the most thinking '
            f"tokens, up to {MAX_BUDGET}."
        )
    if value == 0:
        return 0, False
    return max(0, value), thinking


def _format(value: Any, default: str) -> Any:
    if value is None:
        return default
    if not isinstance(value, str) or value not in REASONING_FORMATS:  # a list or an object cannot be looked up
        raise BadRequest(
            '"reasoning_format" must be "none" (the thinking stays in content, with its tags) or '
            '"deepseek" (the thinking apart, as reasoning_content).'
        )
    return REASONING_FORMATS[value]


def _openrouter(value: Any, thinking: Optional[bool], effort: Any, budget: int) -> tuple[Optional[bool], Any, int]:
    """OpenRouter's `reasoning` object: effort, max_tokens (a budget) and enabled."""
    if not isinstance(value, dict) or any(key not in _REASONING_KEYS for key in value):
        raise BadRequest('"reasoning" must be an object with "effort", "max_tokens" or "enabled".')
    if value.get("exclude") not in (None, False):
        raise BadRequest(
            '"reasoning.exclude" is not supported by this server; leave it out (the thinking is '
            "sent apart from the answer, as reasoning_content)."
        )
    if value.get("effort") is not None:
        effort = _effort(value["effort"], "reasoning.effort")
    if value.get("max_tokens") is not None:
        budget, thinking = _budget(value["max_tokens"], "reasoning.max_tokens", thinking)
    if value.get("enabled") is not None:
        if not isinstance(value["enabled"], bool):
            raise BadRequest('"reasoning.enabled" must be true or false.')
        thinking = value["enabled"]
    return thinking, effort, budget
