"""What the transcript shows of one message (its record and stats row) and the char-format properties that mark
each character of the document: its origin, its round, its message, and refused proposals shown as ghost text.

GUI thread only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from PySide6.QtGui import QTextFormat

from app.engine.events import GenerationStats
from app.store.provenance import RoundRecord, TokenRecord, token_records
from app.replies.stats import format_stats, model_label  # noqa: F401  (used by the window too)
from app.store import Message
from app.store.attachments import Attachment, PictureFile
from app.store.projects.sources import Source
from app.store.tool_calls import ToolCallRecord

# Char-format properties. The origin of a reply's character ("target", "draft", "ngram", "history"), and the
# background it has without highlighting.
PROVENANCE_PROPERTY = QTextFormat.Property.UserProperty + 1
BASE_BACKGROUND_PROPERTY = QTextFormat.Property.UserProperty + 2
# The key of the message a character belongs to (its id; STREAM_KEY while it streams), and its token's round: the
# tooltip finds the round record from them when asked, so nothing is built per token.
MESSAGE_PROPERTY = QTextFormat.Property.UserProperty + 3
ROUND_PROPERTY = QTextFormat.Property.UserProperty + 4
# On the character before which refused proposals belong: their rounds, as "3" or "3,4".
GHOST_ROUNDS_PROPERTY = QTextFormat.Property.UserProperty + 5
# On ghost text itself, which is never part of copied or streamed text.
GHOST_PROPERTY = QTextFormat.Property.UserProperty + 6
# On a block that goes on the line of the block before it: a long line is cut into blocks of bounded length
# (long_text.py), and copied text joins them again.
CONTINUED_PROPERTY = QTextFormat.Property.UserProperty + 7
# On a line break inside a block (a code block's, a soft break): it is never highlighted.
LINE_BREAK_PROPERTY = QTextFormat.Property.UserProperty + 8
STREAM_KEY = -1


@dataclass
class TranscriptMessage:
    """What the transcript needs to show one message (converted from the store's record)."""

    message_id: int
    role: str  # "user", "assistant", "system"
    content: str
    # An assistant reply's answer tokens, each with its origin and its round (an index into `rounds`).
    tokens: Optional[list[TokenRecord]] = None
    stats: Optional[GenerationStats] = None
    model_label: str = ""
    notes: list[str] = field(default_factory=list)
    rounds: Optional[list[RoundRecord]] = None
    comparison: Optional[dict] = None
    attachments: tuple[Attachment, ...] = ()  # files sent with a user message, shown as chips under it
    pictures: tuple[PictureFile, ...] = ()  # pictures sent with a user message, shown as thumbnails under it
    created_at: float = 0.0  # Unix seconds; 0: not known (shown without a time)
    versions: Optional[tuple[int, int]] = None  # (index, count) of a regenerated or edited message's versions
    # A reply's thinking, without markers, and its tokens (rounds index into `rounds`); "" for none.
    reasoning: str = ""
    reasoning_tokens: Optional[list[TokenRecord]] = None
    tool_calls: tuple[ToolCallRecord, ...] = ()  # the tools the reply called (shown by app.ui.tools.call_blocks)
    sources: tuple[Source, ...] = ()  # a reply's: what its question was sent with, which its [1], [2] cite


def transcript_message(
    message: Message, versions: Optional[tuple[int, int]] = None, sources: tuple[Source, ...] = ()
) -> TranscriptMessage:
    """The stored message as the transcript shows it (the store's token columns become records here); `sources`:
    a reply's, those of the question it answers (ChatStore.sources_of)."""
    return TranscriptMessage(
        message_id=message.id,
        role=message.role,
        content=message.content,
        tokens=token_records(message.tokens, message.token_rounds) if message.tokens is not None else None,
        stats=message.stats,
        model_label=model_label(message.target_name, message.draft_name),
        rounds=message.rounds,
        comparison=message.comparison,
        attachments=message.attachments,
        pictures=message.pictures,
        created_at=message.created_at,
        versions=versions,
        reasoning=message.reasoning or "",
        reasoning_tokens=(
            token_records(message.reasoning_tokens, message.reasoning_token_rounds, part="reasoning")
            if message.reasoning_tokens is not None
            else None
        ),
        tool_calls=message.tool_calls,
        sources=sources if message.role == "assistant" else (),
    )


# Replies that ended before the model finished them, which the user can ask to continue.
CONTINUABLE = frozenset({"interrupted", "cancelled", "max_tokens", "error"})
