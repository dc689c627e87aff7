"""The chat store's records: a chat, its settings and its messages, as the store hands them out, and how each is
written into its row's columns and read back.

Snapshots only: changing one changes nothing in the database (use the ChatStore methods).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import logging
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from app.common.text import valid_text

from app.engine.events import GenerationStats
from app.engine.targets import Target, target_from_key
from app.store.attachments import Attachment, PictureFile, chat_folder, decode_attachments, decode_pictures
from app.store.provenance import RoundRecord
from app.store.tool_calls import ToolCallRecord, decode_tool_calls
from app.store.projects.sources import Source, row_sources
from app.store.provenance_doc import (
    StoredProvenance,
    decode_provenance,
    decode_reasoning_tokens,
    decode_tokens,
    encode_reasoning_tokens,
)
from app.store import _fields

log = logging.getLogger(__name__)

Role = Literal["system", "user", "assistant"]
ROLES: tuple[str, ...] = ("system", "user", "assistant")
DEFAULT_TITLE = "New chat"
AUTO_TITLE_LENGTH = 40


_OLD_NGRAM_DRAFT_PATH = "ngram"
REASONING_EFFORTS = ("", "low", "medium", "high")  # app.engine.config.ReasoningEffort


@dataclass
class ChatSettings:
    """How a chat generates. Stored with the chat as JSON; unknown keys from newer versions are ignored.

    temperature defaults to 0 (greedy): the app exists to show speculative decoding, and under greedy sampling the
    reply is the same with or without the draft model, so what the user compares is speed and acceptance alone.
    """

    system_prompt: str = ""
    temperature: float = 0.0
    top_p: float = 0.95
    top_k: int = 40
    seed: int | None = None
    max_tokens: int = 1024
    # llama.cpp's repeat penalty (1: off); None: automatic, which is off, but 1.1 (LM Studio's default) for a model
    # without a chat template written as raw completion, where a base model otherwise loops (app.ui.chat).
    repeat_penalty: float | None = None
    draft_max: int | None = None  # None: the speculation controller picks the draft length each round
    speculative: bool = True
    target_path: str | None = None
    draft_path: str | None = None  # a draft model file
    draft_ngram: bool = False  # draft by n-gram lookup of earlier text instead of a draft model
    # Thinking (GenerationConfig.thinking, .reasoning_effort, .thinking_budget): None, "" and 0 leave it to the
    # model's template; the template reads the first two where it has them (enable_thinking, reasoning_effort).
    thinking: bool | None = None
    reasoning_effort: str = ""  # "", "low", "medium" or "high"
    thinking_budget: int = 0  # the most thinking tokens before its end marker is written for it; 0: no limit
    preset: str | None = None  # the preset last chosen for the chat (app.store.presets); its fields are copied in
    # Tools from the MCP servers (app.ui.tools): off unless the chat (or its preset) turns them on, because their
    # schema goes into every prompt of a chat that offers them (a cold cache, and a small model that calls tools
    # where nobody asked); chats stored before this key existed read it as off. Then those switched off for this
    # chat, by the name the model sees, and those the person said "always allow" to in it, by the tool itself
    # (app.mcp.records.ToolInfo.grant_key: its server, its own name, its schema); every other call is asked first.
    tools: bool = False
    tools_off: list[str] = field(default_factory=list)
    tools_always: list[str] = field(default_factory=list)

    @property
    def target(self) -> Target | None:
        """The chat's target, read back from the key it is stored as (`target_path`)."""
        return target_from_key(self.target_path) if self.target_path else None

    def to_dict(self) -> dict[str, Any]:
        return _fields.to_dict(self)

    @classmethod
    def from_dict(cls, data: Any) -> ChatSettings:
        if isinstance(data, dict) and data.get("draft_path") == _OLD_NGRAM_DRAFT_PATH:
            # Before draft_ngram existed, n-gram drafting was stored as this draft path.
            data = {**data, "draft_path": None, "draft_ngram": True}
        settings, rejected = _fields.from_dict(cls, data)
        if settings.reasoning_effort not in REASONING_EFFORTS:
            settings.reasoning_effort = ""
            rejected.append("reasoning_effort")
        if settings.thinking_budget < 0:
            settings.thinking_budget = 0
            rejected.append("thinking_budget")
        if rejected:
            log.warning("chat settings: ignored bad values for %s", ", ".join(rejected))
        return settings


@dataclass
class Chat:
    """A snapshot of one chat; changing it changes nothing in the database (use the ChatStore methods)."""

    id: int
    title: str
    created_at: float  # Unix seconds
    updated_at: float  # Unix seconds; bumped by every message added, edited or removed
    settings: ChatSettings = field(default_factory=ChatSettings)
    project_id: int | None = None  # the project it is in (app.store.projects); None: none


@dataclass
class Message:
    """A snapshot of one message.

    `tokens` is the answer's per-token provenance, [(text, "target" | "draft" | "ngram" | "history"), ...], or None
    when there is none (user and system messages, or an assistant reply whose text was edited afterwards). `stats`
    is the GenerationStats of the generation that produced it (stored as JSON, read back field by field).
    """

    id: int
    chat_id: int
    role: Role
    content: str
    created_at: float  # Unix seconds
    stats: GenerationStats | None = None
    tokens: list[tuple[str, str]] | None = None  # (text, origin): app.store.provenance.TokenOrigin
    target_name: str | None = None
    draft_name: str | None = None
    token_rounds: list[int] | None = None  # per token, the index into `rounds` of the round that produced it
    rounds: list[RoundRecord] | None = None  # None for replies saved before rounds were kept
    comparison: dict | None = None  # the reply re-run without speculation (Compare with plain), when it was
    attachments: tuple[Attachment, ...] = ()  # files attached to a user message, sent after its text
    pictures: tuple[PictureFile, ...] = ()  # pictures sent with a user message, before its text (app.store.attachments)
    # A thinking model's reasoning before its answer ("" for none), without its markers, and its tokens as
    # `tokens` holds the answer's (marker tokens carry ""); their round indices point into `rounds` too.
    reasoning: str = ""
    reasoning_tokens: list[tuple[str, str]] | None = None
    reasoning_token_rounds: list[int] | None = None
    tool_calls: tuple[ToolCallRecord, ...] = ()  # the tools a reply called, with their results (app.store.tool_calls)
    sources: tuple[Source, ...] = ()  # the documents or passages a question was sent with (projects.sources)


def auto_title(text: str, limit: int = AUTO_TITLE_LENGTH) -> str:
    """A chat title from its first user message: one line, at most about `limit` characters, cut at a word."""
    line = " ".join(text.split())
    if not line:
        return DEFAULT_TITLE
    if len(line) <= limit:
        return line
    cut = line[:limit]
    space = cut.rfind(" ")
    if space >= limit // 2:  # a word boundary not too far back; otherwise cut mid-word rather than keep a stub
        cut = cut[:space]
    return cut.rstrip(" ,.;:-") + "…"


# How each record is written into its row's columns and read back. A column that cannot be read (a damaged or a
# newer version's value) costs only itself: the message shows without it, and the rest of the chat opens.


def encode_stats(stats: GenerationStats | None) -> str | None:
    if stats is None:
        return None
    encoded = json.dumps(_tag_int_keys(stats.to_dict()), ensure_ascii=False, separators=(",", ":"))
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate in a server's text: \u escapes keep it storable
        encoded = json.dumps(_tag_int_keys(stats.to_dict()), separators=(",", ":"))
    return encoded


def decode_stats(encoded: str | None) -> GenerationStats | None:
    """The stats as stored; keys this version does not know, or bad values, are left out (from_dict)."""
    if encoded is None:
        return None
    return _fields.from_dict(GenerationStats, json.loads(encoded, object_hook=_untag_int_keys))[0]


# JSON object keys are strings, but GenerationStats.draft_len_histogram is keyed by int; tag such dicts so they
# come back with int keys instead of silently turning into {"3": 7}.
_INT_KEYS_TAG = "__int_keys__"


def _tag_int_keys(value: Any) -> Any:
    if isinstance(value, dict):
        if value and all(isinstance(k, int) and not isinstance(k, bool) for k in value):
            return {_INT_KEYS_TAG: [[k, _tag_int_keys(v)] for k, v in value.items()]}
        return {k: _tag_int_keys(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_tag_int_keys(v) for v in value]
    return value


def _untag_int_keys(obj: dict) -> Any:
    if len(obj) == 1 and _INT_KEYS_TAG in obj:
        return {int(k): v for k, v in obj[_INT_KEYS_TAG]}
    return obj


def provenance_fields(provenance: StoredProvenance) -> dict[str, Any]:
    return {
        "tokens": provenance.tokens,
        "token_rounds": provenance.token_rounds,
        "rounds": provenance.rounds,
        "comparison": provenance.comparison,
    }


def encode_reasoning(
    reasoning: str,
    tokens: list[tuple[str, str]] | None,
    token_rounds: list[int] | None,
    rounds: list[RoundRecord] | None,
) -> tuple[str | None, str | None]:
    """The `reasoning` and `reasoning_tokens` columns: NULL both for a reply that did not think. Raises
    ValueError or TypeError on bad tokens, before anything is written."""
    if not reasoning and not tokens:
        return None, None
    return valid_text(reasoning), encode_reasoning_tokens(tokens, token_rounds, len(rounds or []))


def reasoning_fields(text: str | None, encoded: str | None, round_count: int, message_id: int | None) -> dict[str, Any]:
    try:
        tokens, token_rounds = decode_reasoning_tokens(encoded, round_count)
    except (ValueError, TypeError, KeyError):
        log.warning("message %s: reasoning provenance unreadable, shown without it", message_id)
        tokens, token_rounds = None, None
    return {"reasoning": text or "", "reasoning_tokens": tokens, "reasoning_token_rounds": token_rounds}


def spelled_by(tokens_json: str) -> str | None:
    try:
        return "".join(text for text, _ in decode_tokens(tokens_json) or [])
    except (ValueError, TypeError, KeyError):
        return None


def settings_json(settings: ChatSettings) -> str:
    return json.dumps(settings.to_dict(), ensure_ascii=False, separators=(",", ":"))


@functools.lru_cache(maxsize=256)
def _settings_from_json(text: str) -> ChatSettings:
    # Most chats share a few settings documents: each is read once, and every chat gets its own copy of it.
    return ChatSettings.from_dict(json.loads(text))


def chat_from_row(row: sqlite3.Row) -> Chat:
    try:
        settings = dataclasses.replace(_settings_from_json(row["settings"]))
    except (ValueError, TypeError):
        log.warning("chat %s: settings unreadable, using defaults", row["id"])
        settings = ChatSettings()
    return Chat(
        id=row["id"],
        title=row["title"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        settings=settings,
        project_id=row["project_id"],
    )


def message_from_row(row: sqlite3.Row, database: Path) -> Message:
    try:
        provenance = decode_provenance(row["tokens"])
    except (ValueError, TypeError, KeyError):
        # The text is what matters; a reply without highlighting is better than a chat that will not open.
        log.warning("message %s: token provenance unreadable, shown without it", row["id"])
        provenance = StoredProvenance()
    try:
        stats = decode_stats(row["stats"])
    except (ValueError, TypeError):
        log.warning("message %s: stats unreadable, shown without them", row["id"])
        stats = None
    return Message(
        id=row["id"],
        chat_id=row["chat_id"],
        role=row["role"],
        content=row["content"],
        created_at=row["created_at"],
        stats=stats,
        target_name=row["target_name"],
        draft_name=row["draft_name"],
        attachments=row_attachments(row),
        pictures=row_pictures(row, database),
        tool_calls=row_tool_calls(row),
        sources=row_sources(row),
        **provenance_fields(provenance),
        **reasoning_fields(row["reasoning"], row["reasoning_tokens"], len(provenance.rounds or []), row["id"]),
    )


def row_attachments(row: sqlite3.Row) -> tuple[Attachment, ...]:
    try:
        return decode_attachments(row["attachments"])
    except (ValueError, TypeError, KeyError):
        log.warning("message %s: attachments unreadable, shown without them", row["id"])
        return ()


def row_pictures(row: sqlite3.Row, database: Path) -> tuple[PictureFile, ...]:
    try:
        return decode_pictures(row["attachments"], chat_folder(database, row["chat_id"]))
    except (ValueError, TypeError, KeyError):
        return ()  # row_attachments says so


def row_tool_calls(row: sqlite3.Row) -> tuple[ToolCallRecord, ...]:
    try:
        return decode_tool_calls(row["tool_calls"])
    except (ValueError, TypeError, KeyError):
        log.warning("message %s: tool calls unreadable, shown without them", row["id"])
        return ()
