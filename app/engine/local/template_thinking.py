"""A thinking model's side of its chat template: the variables a request sets (`enable_thinking`,
`reasoning_effort`, `template_kwargs`), where earlier replies' reasoning goes, and whether the generation prompt
opens the thinking.

History rule: an assistant message may carry its reasoning beside its answer, as `reasoning_content` (what the
window and the API send), `reasoning` (vLLM, OpenRouter) or `thinking` (gpt-oss). The reasoning goes to the
template under each of those names the template reads, and the template decides what to keep (Qwen3: the turns
after the last user message; gpt-oss: none, but a tool call's; DeepSeek-R1's distills never read it). A template
that reads none of them gets no reasoning at all: it is never glued into the answer's text, where the model would
see its old thoughts as something it said.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Optional, Sequence

from app.engine.config import GenerationConfig
from app.engine.errors import PromptFormatError

# The names an assistant message's reasoning goes by, first found first used.
REASONING_KEYS = ("reasoning_content", "reasoning", "thinking")
# How the generation prompt opens a reply's thinking (R1 distills end it with "<think>\n"); a prompt that ends with
# one of these starts the reply inside its reasoning. Qwen3's closed "<think>\n\n</think>\n\n" does not.
THINKING_OPENERS = ("<think>", "[THINK]", "<|channel|>analysis<|message|>")
# The variables the app itself sets; template_kwargs cannot replace them.
RESERVED_VARIABLES = frozenset({"messages", "tools", "add_generation_prompt", "bos_token", "eos_token"})


@functools.lru_cache(maxsize=16)
def reasoning_keys_read(template: Optional[str]) -> tuple[str, ...]:
    """Which of REASONING_KEYS the template reads from a message (`message.thinking`, `message['reasoning']`,
    `"thinking" in message`). A name read off something else (Magistral's `block['thinking']` of a content chunk)
    counts too: the template then gets a key it does not look at, which changes nothing."""
    if not template:
        return ()
    return tuple(key for key in REASONING_KEYS
                 if re.search(rf"\.{key}\b|\[\s*['\"]{key}['\"]\s*\]|['\"]{key}['\"]\s+in\s+\w", template))


def reasoning_of(message: dict) -> str:
    """The reasoning an assistant message carries ("" when none), under whichever name it came."""
    for key in REASONING_KEYS:
        value = message.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def history_for_template(template: Optional[str], messages: Sequence[dict]) -> list[dict]:
    """The messages as the template gets them: each reply's reasoning under the names the template reads, and
    under none where it reads none. Nothing else of a message changes."""
    keys = reasoning_keys_read(template)
    shaped = []
    for message in messages:
        if not any(key in message for key in REASONING_KEYS):
            shaped.append(dict(message))
            continue
        reasoning = reasoning_of(message) if message.get("role") == "assistant" else ""
        kept = {k: v for k, v in message.items() if k not in REASONING_KEYS}
        if reasoning:
            kept.update((key, reasoning) for key in keys)
        shaped.append(kept)
    return shaped


def template_variables(config: Optional[GenerationConfig]) -> dict:
    """The template variables a request sets: its `template_kwargs` (a JSON object's text), then `enable_thinking`
    (when the request says on or off) and `reasoning_effort` (when it names one) over them. Raises
    PromptFormatError, with a sentence a person can act on, when template_kwargs is not a JSON object."""
    if config is None:
        return {}
    variables: dict = {}
    if config.template_kwargs.strip():
        try:
            parsed = json.loads(config.template_kwargs)
        except ValueError as exc:
            raise PromptFormatError(f"The template variables (template_kwargs) are not valid JSON: {exc}.") from None
        if not isinstance(parsed, dict):
            raise PromptFormatError("The template variables (template_kwargs) must be a JSON object, such as "
                                    f'{{"enable_thinking": false}}; got {type(parsed).__name__}.')
        reserved = sorted(RESERVED_VARIABLES & parsed.keys())
        if reserved:
            raise PromptFormatError(f"The template variables (template_kwargs) may not set {', '.join(reserved)}: "
                                    "SpecChat sets those itself.")
        variables.update(parsed)
    if config.thinking is not None:
        variables["enable_thinking"] = config.thinking
    if config.reasoning_effort:
        variables["reasoning_effort"] = config.reasoning_effort
    return variables


def opens_thinking(prompt: str) -> bool:
    """Whether the prompt ends inside a thinking block the template opened (so the reply starts as reasoning)."""
    tail = prompt.rstrip()
    return any(tail.endswith(opener) for opener in THINKING_OPENERS)
