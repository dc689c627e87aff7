"""What the transcript shows of one message (its record and stats row) and the char-format properties that mark
each character of the document: its origin, its round, its message, and refused proposals shown as ghost text.

GUI thread only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from PySide6.QtGui import QTextFormat

from app.engine.events import GenerationStats
from app.provenance import RoundRecord
from app.store import Message, record_from_dict

# Char-format properties. The origin of a reply's character ("target", "draft", "ngram"), and the background it has
# without highlighting.
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
STREAM_KEY = -1


@dataclass
class TranscriptMessage:
    """What the transcript needs to show one message (converted from the store's record)."""

    message_id: int
    role: str  # "user", "assistant", "system"
    content: str
    tokens: Optional[list[tuple[str, str]]] = None  # (text, origin) per token, assistant replies only
    stats: Optional[GenerationStats] = None
    model_label: str = ""
    notes: list[str] = field(default_factory=list)
    token_rounds: Optional[list[int]] = None  # per token, its round's index into `rounds`
    rounds: Optional[list[RoundRecord]] = None
    comparison: Optional[dict] = None


def stats_from_dict(data: Optional[dict]) -> Optional[GenerationStats]:
    """GenerationStats from its stored dict (keys this version does not know, or bad values, are left out)."""
    return record_from_dict(GenerationStats, data)[0] if data else None


def model_label(target_name: Optional[str], draft_name: Optional[str]) -> str:
    if not target_name:
        return "Assistant"
    return f"{target_name}  +  {draft_name}" if draft_name else target_name


def transcript_message(message: Message) -> TranscriptMessage:
    return TranscriptMessage(
        message_id=message.id,
        role=message.role,
        content=message.content,
        tokens=message.tokens,
        stats=stats_from_dict(message.stats),
        model_label=model_label(message.target_name, message.draft_name),
        token_rounds=message.token_rounds,
        rounds=message.rounds,
        comparison=message.comparison,
    )


# Replies that ended before the model finished them, which the user can ask to continue.
CONTINUABLE = frozenset({"interrupted", "cancelled", "max_tokens", "error"})


def format_stats(stats: GenerationStats) -> str:
    """The stats row under a finished reply: "41.3 tok/s · 256 tokens · 68% accepted (120/176) · 0.21 s TTFT"."""
    parts = [f"{stats.tokens_per_second:.1f} tok/s", f"{stats.tokens} tokens"]
    if stats.drafted:
        parts.append(f"{stats.acceptance_rate * 100:.0f}% accepted ({stats.accepted}/{stats.drafted} drafted)")
    else:
        parts.append("no speculation")
    if stats.ttft_s:
        parts.append(f"{stats.ttft_s:.2f} s to first token")
    reason = {
        "cancelled": "stopped",
        "max_tokens": "hit the max tokens limit",
        "context_full": "context full",
        "error": "ended by an error",
        "interrupted": "interrupted: SpecChat closed while it was written",
    }.get(stats.stop_reason)
    if reason:
        parts.append(reason)
    return "  ·  ".join(parts)
