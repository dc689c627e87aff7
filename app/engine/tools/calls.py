"""A tool call as the reply holds it, and which call format a chat template teaches its model.

A model is trained on one way of writing a call; its chat template (the Jinja text in the GGUF) shows which, so
the format is read from the template's own markers rather than from the model's name.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any, Literal, Optional, Sequence

# hermes: Qwen2.5 / Qwen3 / Hermes `<tool_call>{json}</tool_call>` (Qwen3-Coder's `<function=NAME>` XML inside the
# same tags is read by the same parser); llama3: a bare JSON object (`{"name", "parameters"}`), Llama 3.x;
# mistral: `[TOOL_CALLS]` then a JSON list or `NAME[ARGS]{json}`; harmony: gpt-oss's `to=functions.NAME` messages.
ToolFormat = Literal["hermes", "llama3", "mistral", "harmony"]
TOOL_FORMATS: tuple[ToolFormat, ...] = ("hermes", "llama3", "mistral", "harmony")
# The control tokens each family writes its calls with, which the call reader must see although they show as no
# text. Any other control token (Qwen's <|im_start|> in the middle of a reply, say) is read as nothing: its name
# would otherwise reach the reply's content, and hide the call written after it.
CALL_MARKERS: dict[ToolFormat, frozenset[str]] = {
    "hermes": frozenset({"<tool_call>", "</tool_call>", "<think>", "</think>"}),
    "llama3": frozenset({"<|python_tag|>"}),
    "mistral": frozenset({"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"}),
    "harmony": frozenset(
        {"<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|return|>", "<|constrain|>"}
    ),
}


@dataclass(frozen=True)
class ToolCall:
    """One call: the function's name and its arguments as a JSON object's text (OpenAI's `arguments` string)."""

    name: str
    arguments: str
    id: str = ""


def reader_text(text: str, markup: str, family: ToolFormat) -> str:
    """A token as the call reader reads it: its text, or for a control token (no text, `markup` its name) the name
    where it is one of the family's call markers, else nothing."""
    return text or (markup if markup in CALL_MARKERS[family] else "")


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


def forced_call(family: ToolFormat, tools: Sequence[dict], function: str = "") -> Optional[tuple[str, dict]]:
    """For a required call (`function`: that one): the text written for the model before its reply (the call's
    opening tag) and the JSON schema of the call object it must then write, one of the offered tools with its
    own parameters. None where the call's markers are control tokens (Mistral, Harmony), not written as text here."""
    if family not in ("hermes", "llama3"):
        return None
    key = "arguments" if family == "hermes" else "parameters"
    choices = []
    for tool in tools:
        spec = tool.get("function", {})
        if function and spec.get("name") != function:
            continue
        parameters = spec.get("parameters") or {"type": "object"}
        choices.append(
            {
                "type": "object",
                "properties": {"name": {"const": spec.get("name")}, key: parameters},
                "required": ["name", key],
            }
        )
    if not choices:
        return None
    schema = choices[0] if len(choices) == 1 else {"anyOf": choices}
    return ("<tool_call>\n" if family == "hermes" else ""), schema


def format_of(template: Optional[str]) -> ToolFormat:
    """The call format `template` teaches; Hermes tags (the commonest among small open models) when it shows none."""
    text = template or ""
    if "<|channel|>" in text and "to=functions." in text or "<|call|>" in text:
        return "harmony"
    if "[TOOL_CALLS]" in text:
        return "mistral"
    if "<tool_call>" in text:
        return "hermes"
    if "<|python_tag|>" in text or "<|eom_id|>" in text or '"parameters"' in text and "<|eot_id|>" in text:
        return "llama3"
    return "hermes"
