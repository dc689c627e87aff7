"""Which tokens of a llama-server reply its draft model proposed, rebuilt from the per-token timings it streams.

With "timings_per_token": true every chunk carries `timings`: `predicted_n` (tokens generated so far),
`draft_n` (tokens drafted so far) and `draft_n_accepted` (drafted tokens accepted so far; both absent before the
first draft). llama-server (tools/server/server-context.cpp) verifies a round's draft, raises both counters, and
only then sends the round's tokens one by one: the accepted drafts first, then the target's own token. So where
`draft_n_accepted` rises by a at a chunk, that chunk's first new token and the next a-1 are accepted draft tokens,
and the one after is the target's; tokens with no rise before them are the target's (plain steps, rejections).

Where it is ambiguous: llama-server sends no chunk for a token that ends inside a UTF-8 character, and its chat
parser may hold back text (a possible stop string or tag) and send several tokens' text in one later chunk. The
token count is still exact (`predicted_n`), but such a chunk's text cannot be split between its tokens: it goes
to the chunk's last token, the others carry "". And when a held-back chunk also starts a new round, the new round
is taken to start at that chunk's first token. With a hybrid or recurrent target llama-server may replay a round
(it counts the replayed tokens once): the rule then still marks the accepted drafts, and the replay's extra token
as the target's.

Rounds are numbered in the order they are seen. The accepted drafts carry their round's index, and so does the
target's own token that follows them (the next token of the target's after the round was seen); other target
tokens (plain steps) belong to no round. What a round proposed and refused is not reported, only counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from app.engine.events import TokenSource
from app.engine.remote.chunks import MAX_DRAFT_PER_ROUND, ServerTimings


@dataclass(frozen=True)
class RemoteToken:
    text: str
    source: TokenSource
    round: int = -1  # the index of the round it belongs to (-1: none)


@dataclass(frozen=True)
class RemoteRound:
    """One speculation round as the server's counters show it."""

    drafted: int
    accepted: int
    index: int = 0  # counted from 0 in the order rounds are seen


@dataclass
class ServerDraftTracker:
    """Feed it each chunk's text and timings (already clamped to the request, app.engine.remote.chunks) in order; it
    returns the tokens (and rounds) the chunk completes."""

    tokens: int = 0  # tokens seen so far (predicted_n of the last chunk with timings)
    drafted: int = 0
    accepted: int = 0
    per_token: Optional[bool] = None  # None until the first chunk with text: did it carry timings?
    rounds: int = 0  # rounds seen so far
    _pending_draft: int = 0
    _draft_round: int = -1  # the round of the pending draft tokens
    _own_round: Optional[int] = None  # a round whose target token has not arrived yet
    _held_text: list[str] = field(default_factory=list)

    def feed(self, text: str, timings: Optional[ServerTimings]) -> tuple[list[RemoteToken], list[RemoteRound]]:
        if text:
            self._held_text.append(text)
        if timings is None or timings.predicted_n is None:
            if self.per_token is None and text:
                self.per_token = False
            if self.per_token:
                return [], []  # a chunk without timings between timed ones: its text joins the next timed one
            # A server that reports nothing per token: each chunk with text counts as one token of the target's.
            held = "".join(self._held_text)
            self._held_text = []
            if not held:
                return [], []
            self.tokens += 1
            return [RemoteToken(held, "target")], []
        if self.per_token is None:
            self.per_token = True
        n = timings.predicted_n
        drafted, accepted = timings.draft_n, timings.draft_n_accepted
        rounds: list[RemoteRound] = []
        if drafted > self.drafted:
            round_drafted = min(drafted - self.drafted, MAX_DRAFT_PER_ROUND)
            rounds.append(RemoteRound(round_drafted, min(max(0, accepted - self.accepted), round_drafted),
                                      self.rounds))
            self._draft_round = self._own_round = self.rounds
            self.rounds += 1
        if accepted > self.accepted:
            self._pending_draft += accepted - self.accepted
        self.drafted, self.accepted = max(drafted, self.drafted), max(accepted, self.accepted)
        count = n - self.tokens
        held = "".join(self._held_text)
        if count <= 0:
            # Text with no new token (the final chunk, a second delta of one token): keep it for the next token,
            # or, at the end, the caller's flush() emits it.
            return [], rounds
        self._held_text = []
        self.tokens = n
        out: list[RemoteToken] = []
        for i in range(count):
            text = held if i == count - 1 else ""
            if self._pending_draft > 0:
                self._pending_draft -= 1
                out.append(RemoteToken(text, "draft", self._draft_round))
            else:
                own_round, self._own_round = self._own_round, None
                out.append(RemoteToken(text, "target", own_round if own_round is not None else -1))
        return out, rounds

    def flush(self) -> Optional[RemoteToken]:
        """Text still held when the stream ended (no token of its own left to carry it)."""
        held = "".join(self._held_text)
        self._held_text = []
        return RemoteToken(held, "target") if held else None

