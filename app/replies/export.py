"""A chat as a file: Markdown to read, or JSON with every message's tokens and rounds, for people who study draft
acceptance. Used by the window's "Export chat…" and `specchat-cli export` (no Qt).

The JSON document ("format": EXPORT_FORMAT) holds the chat (id, title, times, settings) and every message: its
text, role, time and model names, its stats, and for replies its tokens [{"text", "origin", "round"}] ("origin" is
"target", "draft" (the draft model), "ngram" or "history"; "round" indexes the message's "rounds", -1 for none),
its thinking as "reasoning" ({"text", "tokens"}, the tokens as the answer's; null for a message without thinking),
its rounds (every proposed token id and text, the refused ones included, how many were kept, the target's own
token, reason, time, threads, "kind" (why the round is what it is: "draft", "probe", "fixed", "paused", "costly",
"unavailable", "timing", "server" or "batch"; "" where not recorded) and "expected" (the tokens the controller expected to
be kept)), its comparison with plain decoding, and its attached files [{"name", "content"}] ([] for
none; Markdown shows them after the text as fenced blocks, as the model read them), its pictures as "pictures"
[{"name", "file"}] (the file under the data folder where SpecChat keeps it, [] for none; Markdown links each as an
image after the text), and the tools it called as
"tool_calls" ([] for none; each {"id", "name", "arguments", "server", "tool", "answer", "result", "is_error",
"truncated", "seconds"}: app.store.tool_calls; Markdown shows each as a collapsed <details> block with its arguments
and result), and a question's "sources" ([] for none; each {"number", "path", "start", "end", "score", "text", "heading",
"page", "whole", "by_meaning"}: the documents or passages it was sent with, app.store.projects.sources). Markdown shows a reply's thinking
as a collapsed "Thinking" <details> block before its answer, without the model's markers. A part a message does not have
(a user message's tokens, a reply saved before rounds were kept) is null. Times are Unix seconds.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from app import __version__
from app.common.atomic_write import write_atomic
from app.replies.stats import format_stats, model_label
from app.store.attachments import with_attachments
from app.store.branches import Versions
from app.store.tool_calls import ToolCallRecord
from app.store import Chat, ChatStore, Message, NotFoundError

EXPORT_FORMAT = 1  # the JSON document's version: raised when a field changes meaning or goes away
FORMATS = ("markdown", "json")
SUFFIXES = {"markdown": ".md", "json": ".json"}
_ROLE_HEADINGS = {"user": "You", "system": "System"}
_FENCES = ("```", "~~~")


def format_for_path(path: str | os.PathLike) -> Optional[str]:
    """The format a file name asks for by its suffix (".md", ".markdown", ".json"), None for any other."""
    suffix = Path(path).suffix.lower()
    return {".md": "markdown", ".markdown": "markdown", ".json": "json"}.get(suffix)


def load_chat(store: ChatStore, chat_id: int) -> tuple[Chat, list[Message]]:
    """The chat and all its messages. Raises NotFoundError (a sentence) when there is no such chat."""
    chat = store.get_chat(chat_id)
    if chat is None:
        raise NotFoundError(f"There is no chat {chat_id} in {store.path}.")
    return chat, store.messages(chat_id)


def chat_markdown(chat: Chat, messages: Sequence[Message], versions: Optional[dict[int, Versions]] = None) -> str:
    """A readable transcript: the title, then each message under its author, each reply with its stats line. A chat
    with versions (Regenerate, Edit) is exported on its current branch, each forked message saying which version
    it is; the other versions stay in SpecChat."""
    versions = versions or {}
    exported = (
        f"*Exported from SpecChat {__version__} on {format_date(time.time())}; chat started "
        f"{format_date(chat.created_at)}.*"
    )
    lines = [f"# {_one_line(chat.title)}", "", exported]
    for message in messages:
        heading = _ROLE_HEADINGS.get(message.role) or model_label(message.target_name, message.draft_name)
        text = with_attachments(message.content, message.attachments)  # a message's files, as the model read them
        if message.id in versions:
            shown = versions[message.id]
            heading += f" (version {shown.index} of {shown.count}, the current one)"
        lines += ["", f"## {_one_line(heading)}"]
        if message.reasoning:
            lines += ["", *_thinking_block(message.reasoning)]
        lines += ["", _closed_fences(text)]
        if message.pictures:
            lines += ["", "  ".join(_picture_link(p.name, p.path) for p in message.pictures)]
        for call in message.tool_calls:
            lines += ["", *_call_block(call)]
        stats = message.stats if message.role == "assistant" else None
        if stats is not None:
            lines += ["", f"*{format_stats(stats, message.rounds or ())}*"]
    return "\n".join(lines) + "\n"


def chat_document(
    chat: Chat, messages: Sequence[Message], versions: Optional[dict[int, Versions]] = None
) -> dict[str, Any]:
    """The JSON export as a dict (see the module docstring): the current branch, a forked message with its
    "version": {"index", "count"}."""
    versions = versions or {}
    return {
        "format": EXPORT_FORMAT,
        "app": f"SpecChat {__version__}",
        "exported_at": time.time(),
        "chat": {
            "id": chat.id,
            "title": chat.title,
            "created_at": chat.created_at,
            "updated_at": chat.updated_at,
            "settings": chat.settings.to_dict(),
        },
        "branch": "current",  # the other versions of forked messages are not exported
        "messages": [_message_document(m, versions.get(m.id)) for m in messages],
    }


def chat_json(chat: Chat, messages: Sequence[Message], versions: Optional[dict[int, Versions]] = None) -> str:
    document = chat_document(chat, messages, versions)
    text = json.dumps(document, ensure_ascii=False) + "\n"
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        # A token that ends inside a character is kept as half of it (a lone surrogate): \u escapes keep it.
        text = json.dumps(document, ensure_ascii=True) + "\n"
    return text


def export_text(store: ChatStore, chat_id: int, fmt: str) -> str:
    """The chat as `fmt` ("markdown" or "json"). Raises NotFoundError, or ValueError for another format."""
    if fmt not in FORMATS:
        raise ValueError(f"the export format must be markdown or json, not {fmt!r}")
    chat, messages = load_chat(store, chat_id)
    versions = store.versions(chat_id)
    return chat_markdown(chat, messages, versions) if fmt == "markdown" else chat_json(chat, messages, versions)


def write_export(store: ChatStore, chat_id: int, path: str | os.PathLike, fmt: Optional[str] = None) -> str:
    """Write the chat to `path`, whole or not at all; `fmt` defaults to what the suffix says, else Markdown.
    Returns the format written. Raises NotFoundError, ValueError or OSError."""
    fmt = fmt or format_for_path(path) or "markdown"
    text = export_text(store, chat_id, fmt)
    write_atomic(path, text)  # owner-only, like the chat database it comes from
    return fmt


def _thinking_block(reasoning: str) -> list[str]:
    """A reply's thinking, folded: GitHub, VS Code and most Markdown viewers show only "Thinking" until opened. The
    blank lines let Markdown inside it render; a closing tag in the text itself would end the block early."""
    text = _closed_fences(reasoning.strip("\n")).replace("</details>", "&lt;/details&gt;")
    return ["<details><summary>Thinking</summary>", "", text, "", "</details>"]


def _call_block(call: ToolCallRecord) -> list[str]:
    """A tool call, folded to a line that says what happened; opened, its arguments and the result the model got."""
    what = {"denied": "denied", "stopped": "stopped", "repeated": "asked again, not run", "": "not run"}.get(
        call.answer, f"{'failed' if call.is_error else 'returned'} in {call.seconds:.1f} s"
    )
    server = f" ({_one_line(call.server)})" if call.server else ""
    result = call.result.replace("</details>", "&lt;/details&gt;")
    fence = "~" * max(3, _longest_run(call.result, "~") + 1)
    return [
        f"<details><summary>Tool {_one_line(call.tool or call.name)}{server}: {what}</summary>",
        "",
        "Arguments:",
        "",
        "```json",
        call.arguments,
        "```",
        "",
        "Result:",
        "",
        fence,
        result,
        fence,
        "",
        "</details>",
    ]


def _longest_run(text: str, char: str) -> int:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == char else 0
        longest = max(longest, run)
    return longest


def _token_documents(
    tokens: Optional[list[tuple[str, str]]], token_rounds: Optional[list[int]]
) -> Optional[list[dict[str, Any]]]:
    if tokens is None:
        return None
    rounds_of = token_rounds or [-1] * len(tokens)
    return [{"text": text, "origin": origin, "round": r} for (text, origin), r in zip(tokens, rounds_of)]


def _message_document(message: Message, version: Optional[Versions] = None) -> dict[str, Any]:
    tokens = _token_documents(message.tokens, message.token_rounds)
    reasoning = None
    if message.reasoning or message.reasoning_tokens:
        reasoning = {
            "text": message.reasoning,
            "tokens": _token_documents(message.reasoning_tokens, message.reasoning_token_rounds),
        }
    return {
        "id": message.id,
        "role": message.role,
        "content": message.content,
        "reasoning": reasoning,
        "created_at": message.created_at,
        "target_name": message.target_name,
        "draft_name": message.draft_name,
        "stats": message.stats.to_dict() if message.stats is not None else None,
        "tokens": tokens,
        "rounds": [r.to_dict() for r in message.rounds] if message.rounds is not None else None,
        "comparison": message.comparison,
        "attachments": [a.to_dict() for a in message.attachments],
        "pictures": [{"name": p.name, "file": str(p.path)} for p in message.pictures],
        "tool_calls": [call.to_dict() for call in message.tool_calls],
        "sources": [dataclasses.asdict(source) for source in message.sources],
        **({"version": {"index": version.index, "count": version.count}} if version is not None else {}),
    }


def _picture_link(name: str, path: Path) -> str:
    """A Markdown image of a picture's file (its name, without the brackets that would end the link's text)."""
    label = _one_line(name.replace("[", "(").replace("]", ")"))
    return f"![{label}]({path.absolute().as_uri()})"


def _one_line(text: str) -> str:
    return " ".join(text.split()) or "Untitled"


def format_date(timestamp: float) -> str:
    """A local date and time for people: "2026-12-01 10:15"."""
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def _closed_fences(text: str) -> str:
    """A reply stopped inside a code block leaves its fence open, which would swallow the rest of the file."""
    open_fence = None
    for line in text.split("\n"):
        stripped = line.lstrip()
        if open_fence is None:
            open_fence = next((f for f in _FENCES if stripped.startswith(f)), None)
        elif stripped.startswith(open_fence):
            open_fence = None
    return text if open_fence is None else f"{text}\n{open_fence}"
