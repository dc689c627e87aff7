"""A project as the store hands it out, and the rules for its text: a name kept on one line, and its instructions
put before a chat's own system prompt. Snapshots only: changing one changes nothing in the database."""

from __future__ import annotations

from dataclasses import dataclass

from app.common.text import valid_text
from app.store.errors import StoreError

# The longest name a project header shows whole; a longer one is cut here rather than refused.
NAME_LENGTH = 80


@dataclass(frozen=True)
class Project:
    """A snapshot of one project; changing nothing in the database (use the ProjectStore methods)."""

    id: int
    name: str
    instructions: str = ""
    target_path: str | None = None  # a new chat's model (a target key); None: the one in use
    draft_path: str | None = None  # a new chat's draft picker key (a file, or the n-gram key); None: the one in use
    preset: str | None = None  # a new chat's preset by name; None: none
    created_at: float = 0.0
    updated_at: float = 0.0
    position: int = 0
    documents: tuple[str, ...] = ()  # files and folders, as the person added them


def clean_name(name: str) -> str:
    """A project's name as kept: one line, spaces collapsed, at most NAME_LENGTH characters. Raises StoreError for
    a name with nothing in it."""
    cleaned = " ".join(valid_text(name).split())[:NAME_LENGTH]
    if not cleaned:
        raise StoreError("A project needs a name: type at least one letter.")
    return cleaned


def with_instructions(system_prompt: str, instructions: str) -> str:
    """A chat's system prompt with its project's instructions before it (either may be empty): the project sets the
    ground, the chat's own prompt narrows it."""
    parts = [part.strip() for part in (instructions, system_prompt) if part.strip()]
    return "\n\n".join(parts)
