"""A tool call as the reply holds it, and which call format a chat template teaches its model.

A model is trained on one way of writing a call; its chat template (the Jinja text in the GGUF) shows which, so
the format is read from the template's own markers rather than from the model's name.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any, Literal, Optional

# hermes: Qwen2.5 / Qwen3 / Hermes `<tool_call>{json}</tool_call>` (Qwen3-Coder's `<function=NAME>` XML inside the
# same tags is read by the same parser); llama3: a bare JSON object (`{"name", "parameters"}`), Llama 3.x;
# mistral: `[TOOL_CALLS]` then a JSON list or `NAME[ARGS]{json}`; harmony: gpt-oss's `to=functions.NAME` messages.
ToolFormat = Literal["hermes", "llama3", "mistral", "harmony"]
TOOL_FORMATS: tuple[ToolFormat, ...] = ("hermes", "llama3", "mistral", "harmony")


@dataclass(frozen=True)
class ToolCall:
    """One call: the function's name and its arguments as a JSON object's text (OpenAI's `arguments` string)."""

    name: str
    arguments: str
    id: str = ""


def new_call_id() -> str:
    return f"call_{secrets.token_hex(12)}"


def arguments_text(value: Any) -> Optional[str]:
    """Arguments as a JSON object's text: an object as it is, a string holding one read first; None otherwise."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    if value is None:
        value = {}
    if not isinstance(value, dict):
        return None
    return json.dumps(value, ensure_ascii=False)


def forced_opening(family: ToolFormat, function: str = "") -> Optional[str]:
    """The start of a call in `family`, written for the model when a call is required (`function`: that one):
    the model goes on from inside the call. None where the opening is made of control tokens (Mistral, Harmony),
    which are not written as text here."""
    named = f'{json.dumps(function)}, "arguments": ' if function else ""
    if family == "hermes":
        return '<tool_call>\n{"name": ' + (named or '"')
    if family == "llama3":
        return '{"name": ' + (named.replace('"arguments"', '"parameters"') or '"')
    return None


def format_of(template: Optional[str]) -> ToolFormat:
    """The call format `template` teaches; Hermes tags (the commonest among small open models) when it shows none."""
    text = template or ""
    if "<|channel|>" in text and "to=functions." in text or "<|call|>" in text:
        return "harmony"
    if "[TOOL_CALLS]" in text:
        return "mistral"
    if "<tool_call>" in text:
        return "hermes"
    if "<|python_tag|>" in text or "<|eom_id|>" in text or "\"parameters\"" in text and "<|eot_id|>" in text:
        return "llama3"
    return "hermes"
