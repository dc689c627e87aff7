"""Each character of a reply: the origin and round of the token it belongs to, and where refused proposals go.

Plain Python (no Qt). The offsets are those of the reply's text, which the Markdown blocks map shown characters to.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from app.store.provenance import RoundRecord, TokenRecord

NO_ROUND = -1


@dataclass
class ReplyChars:
    origins: list[str]  # per character: "target", "draft" (the draft model), "ngram" or "history"
    rounds: list[int]  # per character: its token's round, an index into the reply's rounds (NO_ROUND: unknown)
    # (offset, round) for each round whose proposal the target partly refused: the refused text belongs right
    # before the target's own token of that round, at `offset`. In offset order.
    ghosts: list[tuple[int, int]] = field(default_factory=list)


def reply_chars(
    content: str, tokens: Optional[Sequence[TokenRecord]], rounds: Optional[Sequence[RoundRecord]] = None
) -> ReplyChars:
    """Per-character provenance of `content` from its tokens; padded with the target (or cut) to the content, so
    a reply whose tokens do not add up to its text (edited, or saved by an older version) still shows."""
    if not tokens:
        tokens = [TokenRecord(content)]
    origins: list[str] = []
    char_rounds: list[int] = []
    own_at: dict[int, int] = {}  # round -> offset of the target's own token
    for token in tokens:
        if token.origin == "target" and token.round >= 0 and token.round not in own_at:
            own_at[token.round] = len(origins)
        origins.extend([token.origin] * len(token.text))
        char_rounds.extend([token.round] * len(token.text))
    length = len(content)
    if len(origins) < length:
        origins.extend(["target"] * (length - len(origins)))
        char_rounds.extend([NO_ROUND] * (length - len(char_rounds)))
    del origins[length:], char_rounds[length:]
    ghosts = sorted(
        (offset, r)
        for r, offset in own_at.items()
        if offset < length and rounds is not None and r < len(rounds) and rounds[r].has_refused
    )
    return ReplyChars(origins, char_rounds, ghosts)
