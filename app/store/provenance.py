"""What a reply's provenance holds, as the store, the window, export and the CLI share it (no engine, no Qt).

Per token: its text, where it came from and the round that produced it. Per round: what was proposed (the refused
tokens included), how many the target kept, the token it wrote itself instead, who drafted, why, and how long it took.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Optional, Sequence

from app.engine.events import COPYING_SOURCES

if TYPE_CHECKING:
    from app.engine.events import RoundEvent, TokenEvent

# Where a kept token came from. "draft" is the draft model (the name older chats stored for any accepted draft
# token, when n-gram copies were not told apart); "ngram" is a copy found by n-gram lookup of earlier text;
# "history" a continuation of earlier prompts and replies (the history drafter).
TokenOrigin = Literal["target", "draft", "ngram", "history"]
ORIGINS: tuple[str, ...] = ("target", "draft", *COPYING_SOURCES)


def token_origin(source: str, drafter: str | None) -> str:
    """The stored origin of a kept token from its engine event's source ("draft"/"target") and drafter."""
    if source != "draft":
        return "target"
    return drafter if drafter in COPYING_SOURCES else "draft"


@dataclass(frozen=True, slots=True)
class TokenRecord:
    """One kept token of a reply, as the window streams, shows and saves it: its text, who wrote it (a TokenOrigin),
    the round that produced it (an index into the reply's rounds; -1: none known) and the part of the reply it
    belongs to ("reasoning" or "answer", app.engine.events.TokenPart). The store keeps tokens as two columns
    ((text, origin) pairs and rounds); `token_records` and `token_columns` convert at its boundary."""

    text: str
    origin: str = "target"
    round: int = -1
    part: str = "answer"

    @classmethod
    def from_event(cls, event: TokenEvent, round_index: int) -> TokenRecord:
        """The record of an engine's token event whose round is `round_index` in the whole reply."""
        return cls(event.text, token_origin(event.source, event.drafter), round_index, event.part)


def token_records(
    tokens: Optional[Sequence[tuple[str, str]]], token_rounds: Optional[Sequence[int]] = None, part: str = "answer"
) -> list[TokenRecord]:
    """The store's columns as records: a token without a round (an older chat's) gets -1."""
    rounds = token_rounds or ()
    return [
        TokenRecord(text, origin, rounds[n] if n < len(rounds) else -1, part)
        for n, (text, origin) in enumerate(tokens or ())
    ]


def token_columns(records: Sequence[TokenRecord]) -> tuple[list[tuple[str, str]], list[int]]:
    """Records as the store's columns: (text, origin) per token, and each one's round."""
    return [(t.text, t.origin) for t in records], [t.round for t in records]


@dataclass
class RoundRecord:
    """One speculation round of a reply."""

    drafter: str  # "model", "ngram", "history" or "none" (plain decoding)
    k: int  # the draft length the controller allowed
    proposed: list[int] = field(default_factory=list)  # every drafted token id, refused ones included
    proposed_text: list[str] = field(default_factory=list)
    kept: int = 0  # how many of `proposed` the target accepted
    own: int = -1  # the token the target wrote after them (-1: none)
    own_text: str = ""
    reason: str = ""
    time_s: float = 0.0
    threads: int = 0  # the CPU threads the round ran on (0: not known)
    # Why the round is what it is, as a word (app.engine.events.RoundKind: "draft", "probe", "paused", "costly",
    # "timing", ...; "" where not recorded, as in chats saved before rounds kept it), and how many of the k tokens
    # the controller expected to be kept (0: nothing expected).
    kind: str = ""
    expected: float = 0.0

    @property
    def kept_text(self) -> str:
        return "".join(self.proposed_text[: self.kept])

    @property
    def refused_text(self) -> str:
        return "".join(self.proposed_text[self.kept :])

    @property
    def has_refused(self) -> bool:
        """Whether the target refused part of the proposal (even a part whose text is empty)."""
        return self.kept < len(self.proposed_text)

    @classmethod
    def from_event(cls, event: RoundEvent) -> RoundRecord:
        """The record of an engine's round event (the window and the CLI keep rounds this way)."""
        return cls(
            drafter=event.drafter,
            k=event.draft_len,
            proposed=list(event.proposed),
            proposed_text=list(event.proposed_text),
            kept=event.accepted,
            own=event.own,
            own_text=event.own_text,
            reason=event.reason,
            time_s=event.time_s,
            threads=event.threads,
            kind=event.kind,
            expected=event.expected,
        )

    def to_dict(self) -> dict[str, Any]:
        """As JSON (`generate --json`, export): every field under its own name."""
        return asdict(self)
