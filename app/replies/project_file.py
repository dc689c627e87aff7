"""A project as one file (`.specchat-project.json`): its name, instructions, defaults and document paths, and each of
its chats as the chat export's JSON document (app.replies.export.chat_document). Used by the window's project menu
(no Qt).

Importing makes a new project (a name already taken gets " (2)") with new chats holding each message's text, role,
thinking, model names, stats, attached files and which model wrote each token; a reply's speculation rounds and
comparison with plain decoding stay in the file. A file that is not such a document is refused with one sentence,
and nothing is stored from it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from app import __version__
from app.common.atomic_write import write_atomic
from app.engine.events import GenerationStats
from app.replies.export import chat_document, load_chat
from app.store import ChatSettings, ChatStore, StoreError, record_from_dict
from app.store.attachments import Attachment
from app.store.projects import Project
from app.store.projects.sources import Source

PROJECT_KIND = "specchat-project"
PROJECT_FORMAT = 1  # raised when a field changes meaning or goes away
SUFFIX = ".specchat-project.json"
# A project file is read whole; one larger than this is not one SpecChat wrote for a person to move about.
MAX_FILE_BYTES = 512 * 1024 * 1024


class ProjectFileError(ValueError):
    """A file that cannot be imported as a project; the message says which file and why, in one sentence."""


def project_document(store: ChatStore, project_id: int) -> dict[str, Any]:
    """The project and its chats as one JSON-ready dict. Raises NotFoundError."""
    project = store.projects.require_project(project_id)
    chats = []
    for chat_id in reversed(store.projects.chat_ids(project_id)):  # oldest first, so an import keeps their order
        chat, messages = load_chat(store, chat_id)
        chats.append(chat_document(chat, messages, store.versions(chat_id)))
    return {
        "kind": PROJECT_KIND,
        "format": PROJECT_FORMAT,
        "app": f"SpecChat {__version__}",
        "project": {
            "name": project.name,
            "instructions": project.instructions,
            "target_path": project.target_path,
            "draft_path": project.draft_path,
            "preset": project.preset,
            "documents": list(project.documents),
        },
        "chats": chats,
    }


def write_project(store: ChatStore, project_id: int, path: str | os.PathLike) -> Path:
    """Write the project to `path` whole or not at all (the suffix is added when missing); returns where.
    Raises NotFoundError or OSError."""
    target = Path(path)
    if not target.name.endswith(".json"):
        target = target.with_name(target.name + SUFFIX)
    document = project_document(store, project_id)
    try:
        text = json.dumps(document, ensure_ascii=False) + "\n"
        text.encode("utf-8")
    except UnicodeEncodeError:  # half a character kept from a token: \u escapes keep it
        text = json.dumps(document, ensure_ascii=True) + "\n"
    write_atomic(target, text)
    return target


def read_project_file(path: str | os.PathLike) -> dict[str, Any]:
    """The file's document, checked to be a project; raises ProjectFileError (one sentence) otherwise."""
    path = Path(path)
    name = path.name
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ProjectFileError(f"{name} is too large to be a SpecChat project file.")
        document = json.loads(path.read_text("utf-8"))
    except ProjectFileError:
        raise
    except OSError as exc:
        raise ProjectFileError(f"{name} could not be read: {exc.strerror or exc}.") from exc
    except (UnicodeDecodeError, ValueError) as exc:
        raise ProjectFileError(f"{name} is not a SpecChat project file: it is not JSON text.") from exc
    if not isinstance(document, dict) or document.get("kind") != PROJECT_KIND:
        raise ProjectFileError(f"{name} is not a SpecChat project file (Export project… writes one).")
    version = document.get("format")
    if not isinstance(version, int) or version > PROJECT_FORMAT:
        raise ProjectFileError(f"{name} was written by a newer SpecChat; update SpecChat to import it.")
    if not isinstance(document.get("project"), dict) or not isinstance(document.get("chats"), list):
        raise ProjectFileError(f"{name} is a damaged SpecChat project file: its project or chats are missing.")
    return document


def import_project(store: ChatStore, path: str | os.PathLike) -> Project:
    """Make a new project from the file, with its chats. Raises ProjectFileError or StoreError (one sentence);
    a failure part way leaves nothing of the file behind."""
    document = read_project_file(path)
    about = document["project"]
    taken = {p.name for p in store.projects.list_projects()}
    project = store.projects.create_project(
        _free_name(_text(about.get("name")) or Path(path).name.split(".")[0] or "Imported project", taken),
        instructions=_text(about.get("instructions")),
        target_path=_text(about.get("target_path")) or None,
        draft_path=_text(about.get("draft_path")) or None,
        preset=_text(about.get("preset")) or None,
        documents=[d for d in about.get("documents") or [] if isinstance(d, str)],
    )
    try:
        for chat in document["chats"]:
            _import_chat(store, project.id, chat)
    except (StoreError, ValueError, TypeError, KeyError, AttributeError) as exc:
        store.projects.delete_project(project.id, delete_chats=True)
        detail = str(exc) if isinstance(exc, StoreError) else "one of its chats is damaged"
        raise ProjectFileError(f"{Path(path).name} could not be imported: {detail}") from exc
    return project


def _import_chat(store: ChatStore, project_id: int, document: dict[str, Any]) -> None:
    about = document["chat"]
    chat = store.create_chat(
        _text(about.get("title")) or "Imported chat", ChatSettings.from_dict(about.get("settings"))
    )
    store.projects.move_chat(chat.id, project_id)
    for message in document.get("messages") or []:
        role = message["role"]
        if role not in ("system", "user", "assistant"):
            raise ValueError(f"unknown role {role!r}")
        reasoning = message.get("reasoning") or {}
        stats = message.get("stats")
        store.add_message(
            chat.id,
            role,
            _text(message.get("content")),
            stats=record_from_dict(GenerationStats, stats)[0] if isinstance(stats, dict) else None,
            tokens=_tokens(message.get("tokens")),
            target_name=message.get("target_name"),
            draft_name=message.get("draft_name"),
            attachments=[Attachment(_text(a["name"]), _text(a["content"])) for a in message.get("attachments") or []],
            reasoning=_text(reasoning.get("text")),
            reasoning_tokens=_tokens(reasoning.get("tokens")),
            sources=tuple(record_from_dict(Source, s)[0] for s in message.get("sources") or [] if isinstance(s, dict)),
        )


def _tokens(documents: Any) -> list[tuple[str, str]] | None:
    if not isinstance(documents, list):
        return None
    return [(_text(t["text"]), _text(t["origin"])) for t in documents]


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _free_name(wanted: str, taken: set[str]) -> str:
    if wanted not in taken:
        return wanted
    n = 2
    while f"{wanted} ({n})" in taken:
        n += 1
    return f"{wanted} ({n})"
