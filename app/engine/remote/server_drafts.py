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

A thinking model's reasoning arrives beside `content` (`reasoning_content` or `reasoning`): each token carries the
part its text belongs to. Where one chunk's text holds both parts (its reasoning, then its content), the token gets
the first, and the rest follows as a token with `counted` False (the contract's tail with no token of its own);
tokens with no text of their own take the part of the text they arrive with.

Rounds are numbered in the order they are seen. The accepted drafts carry their round's index, and so does the
target's own token that follows them (the next token of the target's after the round was seen); other target
tokens (plain steps) belong to no round. What a round proposed and refused is not reported, only counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

from app.engine.events import TokenPart, TokenSource
from app.engine.remote.chunks import MAX_DRAFT_PER_ROUND, ServerTimings


@dataclass(frozen=True)
class RemoteToken:
    text: str
    source: TokenSource
    round: int = -1  # the index of the round it belongs to (-1: none)
    part: TokenPart = "answer"
    counted: bool = True  # False: the rest of a token's text after a part boundary, no token of its own


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
    _held_text: list[tuple[TokenPart, str]] = field(default_factory=list)
    _part: TokenPart = "answer"  # the part of the last text seen

    def feed(
        self, text: str, timings: Optional[ServerTimings], reasoning: str = ""
    ) -> tuple[list[RemoteToken], list[RemoteRound]]:
        """`text` is the chunk's content, `reasoning` its reasoning (which comes first)."""
        if reasoning:
            self._held_text.append(("reasoning", reasoning))
        if text:
            self._held_text.append(("answer", text))
        if timings is None or timings.predicted_n is None:
            if self.per_token is None and (text or reasoning):
                self.per_token = False
            if self.per_token:
                return [], []  # a chunk without timings between timed ones: its text joins the next timed one
            # A server that reports nothing per token: each chunk with text counts as one token of the target's.
            runs = self._take_held()
            if not runs:
                return [], []
            self.tokens += 1
            return self._tokens(1, runs, lambda: ("target", -1)), []
        if self.per_token is None:
            self.per_token = True
        n = timings.predicted_n
        drafted, accepted = timings.draft_n, timings.draft_n_accepted
        rounds: list[RemoteRound] = []
        if drafted > self.drafted:
            round_drafted = min(drafted - self.drafted, MAX_DRAFT_PER_ROUND)
            rounds.append(RemoteRound(round_drafted, min(max(0, accepted - self.accepted), round_drafted), self.rounds))
            self._draft_round = self._own_round = self.rounds
            self.rounds += 1
        if accepted > self.accepted:
            self._pending_draft += accepted - self.accepted
        self.drafted, self.accepted = max(drafted, self.drafted), max(accepted, self.accepted)
        count = n - self.tokens
        if count <= 0:
            # Text with no new token (the final chunk, a second delta of one token): keep it for the next token,
            # or, at the end, the caller's flush() emits it.
            return [], rounds
        self.tokens = n
        return self._tokens(count, self._take_held(), self._next_source), rounds

    def _next_source(self) -> tuple[TokenSource, int]:
        """The next token's source and round: an accepted draft while the round's count lasts, else the target's."""
        if self._pending_draft > 0:
            self._pending_draft -= 1
            return "draft", self._draft_round
        own_round, self._own_round = self._own_round, None
        return "target", own_round if own_round is not None else -1

    def _take_held(self) -> list[tuple[TokenPart, str]]:
        """The held text as runs of one part each, in order; nothing is held after."""
        runs: list[tuple[TokenPart, str]] = []
        for part, text in self._held_text:
            if runs and runs[-1][0] == part:
                runs[-1] = (part, runs[-1][1] + text)
            else:
                runs.append((part, text))
        self._held_text = []
        return runs

    def _tokens(
        self, count: int, runs: list[tuple[TokenPart, str]], source: Callable[[], tuple[TokenSource, int]]
    ) -> list[RemoteToken]:
        """`count` tokens for `runs`: the text goes to the last token (the first run's), the other runs follow it
        as uncounted tails; the tokens before it carry "" in the part of the text they arrive with."""
        if runs:
            self._part = runs[0][0]
        out: list[RemoteToken] = []
        for i in range(count):
            kind, round_index = source()
            text = runs[0][1] if runs and i == count - 1 else ""
            out.append(RemoteToken(text, kind, round_index, self._part))
        last = out[-1]
        for part, text in runs[1:]:
            self._part = part
            out.append(RemoteToken(text, last.source, last.round, part, counted=False))
        return out

    def flush(self) -> list[RemoteToken]:
        """Text still held when the stream ended (no token of its own left to carry it), a tail per part."""
        out = []
        for part, text in self._take_held():
            self._part = part
            out.append(RemoteToken(text, "target", part=part, counted=False))
        return out
