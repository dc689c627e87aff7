"""The chat store's records: a chat, its settings and its messages, as the store hands them out.

Snapshots only: changing one changes nothing in the database (use the ChatStore methods).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Literal

from app.engine.events import GenerationStats
from app.engine.targets import Target, target_from_key
from app.store.attachments import Attachment, PictureFile
from app.store.provenance import RoundRecord
from app.store.tool_calls import ToolCallRecord
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
