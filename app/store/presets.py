"""Presets: named sets of a chat's system prompt, sampling and draft settings, chosen per chat.

Kept in AppSettings.presets (written atomically with the other settings). The built-in "Default" is ChatSettings'
own defaults and is never stored or deleted. Choosing a preset for a chat copies its fields into the chat's
settings, so a request reads the chat alone and a later edit of the preset never rewrites chats already written.
No Qt.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Optional

from app.store import _fields
from app.store.records import ChatSettings

DEFAULT_PRESET = "Default"
# The ChatSettings fields a preset sets; the chat's models are its own.
# A menu of a thousand presets is already more than a person picks from; a file with more (a script's, a damaged
# one) is read this far only, and the rest said in a sentence.
MAX_PRESETS = 1000
PRESET_FIELDS = ("system_prompt", "temperature", "top_p", "top_k", "max_tokens", "speculative", "draft_ngram", "tools")


@dataclass(frozen=True)
class Preset:
    name: str
    system_prompt: str = ""
    temperature: float = 0.0
    top_p: float = 0.95
    top_k: int = 40
    max_tokens: int = 1024
    speculative: bool = True
    draft_ngram: bool = False  # draft by n-gram lookup instead of the draft model
    tools: bool = False  # offer the tools of Settings > Tools (ChatSettings.tools)

    def to_dict(self) -> dict[str, Any]:
        return _fields.to_dict(self)


def default_preset() -> Preset:
    defaults = ChatSettings()
    return Preset(DEFAULT_PRESET, **{name: getattr(defaults, name) for name in PRESET_FIELDS})


def read_presets(data: Any) -> tuple[list[Preset], bool]:
    """The stored presets, the built-in first; True when some entry could not be used (left out). Only the first
    MAX_PRESETS entries are read (presets_left_out counts the others)."""
    presets = [default_preset()]
    taken = {DEFAULT_PRESET.casefold()}
    dropped = not isinstance(data, list)
    for entry in data[:MAX_PRESETS] if isinstance(data, list) else []:
        name = entry.get("name") if isinstance(entry, dict) else None
        if not isinstance(name, str) or not name.strip() or name.casefold() in taken:
            dropped = True
            continue
        preset, rejected = _fields.from_dict(Preset, entry)
        dropped = dropped or bool(rejected)
        presets.append(preset)
        taken.add(name.casefold())
    return presets, dropped


def presets_left_out(data: Any) -> int:
    """How many stored entries read_presets does not read (past MAX_PRESETS)."""
    return max(0, len(data) - MAX_PRESETS) if isinstance(data, list) else 0


def stored(presets: list[Preset]) -> list[dict[str, Any]]:
    """What AppSettings.presets keeps: every preset but the built-in."""
    return [p.to_dict() for p in presets if p.name != DEFAULT_PRESET]


def find(presets: list[Preset], name: Optional[str]) -> Optional[Preset]:
    return next((p for p in presets if p.name.casefold() == (name or "").casefold()), None)


def free_name(presets: list[Preset], wanted: str) -> str:
    """`wanted`, or "wanted 2", "wanted 3"... where that name is taken (names are told apart without case)."""
    name, n = wanted.strip() or "Preset", 2
    base = name
    while find(presets, name) is not None:
        name, n = f"{base} {n}", n + 1
    return name


def applied(settings: ChatSettings, preset: Preset) -> ChatSettings:
    """A chat's settings with the preset chosen: its fields copied in, the chat's models kept."""
    return dataclasses.replace(settings, **{name: getattr(preset, name) for name in PRESET_FIELDS})
