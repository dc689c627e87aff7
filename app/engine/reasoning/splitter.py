"""The stream splitter: a reply's token events, each told reasoning or answer as it arrives (TokenEvent.part).

It reads only the reply's tokens, never the prompt, so nothing the user wrote can open or close a thinking block.
A marker may be split over several tokens ("<", "think", ">") or be one special token whose text never shows
(Harmony's `<|channel|>`): text that may be the start of a marker is held back until it is one or turns out not to
be, and is then released. While a reply's opening is undecided (is it a `<think>`?) its events wait, so every
event carries the part it belongs to; that is a marker's length of text at most.

The events' contract (app.engine.events.TokenEvent): the answer's texts add up to FinishedEvent.text, the
reasoning's to FinishedEvent.reasoning; markers (and the blank lines around them) are in neither, and their tokens
carry "" as reasoning; a token that holds both parts is followed by an event of token_id -1 with the second. The
one exception is a reply whose model ended its turn inside its thinking (stats.thinking_unclosed): its reasoning's
texts add up to FinishedEvent.text, which is its answer (turn_end_closes_thinking).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Callable, Iterable, Iterator, Literal, Optional, Sequence

from app.engine.events import EngineEvent, FinishedEvent, RoundEvent, TokenEvent, TokenPart
from app.engine.reasoning.markers import THINK, MarkerSet, ReplyStart

_Mode = Literal["opening", "reasoning", "after", "answer"]
_Segment = tuple[TokenPart, str]


class ReplySplitter:
    """Splits one reply. Feed it the reply's events in order, from the thread that reads them."""

    def __init__(
        self,
        markers: Sequence[MarkerSet] = (THINK,),
        start: ReplyStart = "opening",
        *,
        split: bool = True,
        continued: bool = False,
        ids: bool = True,
        clock: Callable[[], float] = time.perf_counter,
    ):
        """`split` False (reasoning_format "none") passes every event through as it is: the thinking stays in
        the answer's text, markers and all. `continued`: the reply goes on from a partial one, so its first text
        continues the part it starts in as it is (no blank lines of a marker to leave out). `ids` False: the
        tokens come without ids (a server's), so every event fed counts as a token, not only those with one.
        Events fed already marked "reasoning" (a server that split the reply itself) pass as they are."""
        self._ids = ids
        self._markers = tuple(markers) or (THINK,)
        self._split = split
        self._family: MarkerSet = self._markers[0]
        self._mode: _Mode = start if split else "answer"
        self._fresh = start == "reasoning" and not continued  # the thinking's leading blank lines are the marker's
        self._held = ""  # text not yet given to a part
        self._special: list[tuple[int, int]] = []  # spans of _held that are special tokens' names, never shown
        self._waiting: list[EngineEvent] = []  # events held while the reply's opening is undecided
        self._marker_seen = False  # a marker was read since the last events went out
        self._waiting_since: _Mode = "opening"
        self._raw: list[str] = []
        self._answer: list[str] = []
        self._reasoning: list[str] = []
        self._rounds: dict[int, tuple[int, int]] = {}  # round index -> (drafted, accepted), until its first token
        self.reasoning_tokens = 0
        self.reasoning_drafted = 0
        self.reasoning_accepted = 0
        self._clock = clock
        self._first_at: Optional[float] = None
        self._answer_at: Optional[float] = None
        self._last_index = -1

    # -- what the decoder asks -----------------------------------------------------------------------------------

    @property
    def thinking(self) -> bool:
        """The reply is inside its thinking now (a thinking budget counts from here)."""
        return self._split and self._mode == "reasoning"

    @property
    def family(self) -> MarkerSet:
        """The markers of the thinking being read (the model's own until a reply opens another)."""
        return self._family

    @property
    def raw_text(self) -> str:
        """The reply's text as the model wrote it, markers included: what its tokens stand for."""
        return "".join(self._raw)

    # -- feeding -------------------------------------------------------------------------------------------------

    def feed(self, event: EngineEvent, special: str = "") -> list[EngineEvent]:
        """The events to pass on for `event`. `special`: a special token's name, for a token whose text is ""
        because it never shows (a marker may be made of such tokens)."""
        if not self._split:
            if isinstance(event, TokenEvent):
                self._raw.append(event.text)
            return [event]
        if isinstance(event, TokenEvent):
            self._raw.append(event.text)
            if event.part == "reasoning":
                return [self._mark(event, token=True)]
            return self._token(event, special)
        if isinstance(event, FinishedEvent):
            return self._finish(event)
        if self._waiting:
            self._waiting.append(event)
            return []
        return [self._mark(event)]

    def _token(self, event: TokenEvent, special: str) -> list[EngineEvent]:
        if self._first_at is None and self._is_token(event):
            self._first_at = self._clock()
        start = len(self._held)
        self._held += special if special and not event.text else event.text
        if special and not event.text:
            self._special.append((start, len(self._held)))
        before = self._mode
        segments = self._advance()
        if self._mode in ("opening", "after") and not any(text for _, text in segments):
            if not self._waiting:
                self._waiting_since = before if before == "after" else self._mode
            self._waiting.append(event)
            return []
        return self._release(event, segments)

    def _finish(self, event: FinishedEvent) -> list[EngineEvent]:
        ended_in_reasoning = self._mode == "reasoning"
        segments: list[_Segment] = []
        text = self._visible(len(self._held))
        if self._mode == "reasoning":
            segments.append(("reasoning", text.rstrip()))
        elif self._mode == "after" and self._could_open(self._held.lstrip()):
            segments.append(("reasoning", ""))  # the start of an answer's header, never finished
        else:
            segments.append(("answer", text.lstrip() if self._mode == "after" else text))
        self._consume(len(self._held))
        tail = TokenEvent(event.request_id, self._next_index(), -1, "", "target")
        out = self._release(tail, segments, tail_only=True)
        answer, reasoning = "".join(self._answer), "".join(self._reasoning)
        ended = self._clock()
        thought_s = 0.0
        if self.reasoning_tokens and self._first_at is not None:
            thought_s = (self._answer_at if self._answer_at is not None else ended) - self._first_at
        stats = dataclasses.replace(
            event.stats,
            reasoning_tokens=self.reasoning_tokens,
            reasoning_drafted=self.reasoning_drafted,
            reasoning_accepted=self.reasoning_accepted,
            reasoning_s=thought_s,
            ended_in_reasoning=bool(self.reasoning_tokens) and (ended_in_reasoning or not answer.strip()),
        )
        out.append(
            turn_end_closes_thinking(
                FinishedEvent(event.request_id, answer, stats, reasoning), unclosed=ended_in_reasoning
            )
        )
        return out

    # -- the parts -----------------------------------------------------------------------------------------------

    def _advance(self) -> list[_Segment]:
        """Give what can be decided of the held text to its part; a marker read leaves a ("reasoning", "")."""
        out: list[_Segment] = []
        while True:
            if self._mode == "answer":
                if self._held:
                    out.append(("answer", self._visible(len(self._held))))
                    self._consume(len(self._held))
                return out
            if self._mode == "reasoning":
                if self._fresh:
                    blank = len(self._held) - len(self._held.lstrip())
                    self._consume(blank)
                    if not self._held:
                        return out
                    self._fresh = False
                end = self._held.find(self._family.end)
                if end >= 0:
                    out.append(("reasoning", self._visible(end).rstrip()))
                    self._consume(end + len(self._family.end))
                    self._mode, self._marker_seen = "after", True
                    continue
                keep = _held_from(self._held, self._family.end)
                if keep:
                    out.append(("reasoning", self._visible(keep)))
                    self._consume(keep)
                return out
            blank = len(self._held) - len(self._held.lstrip())
            rest = self._held[blank:]
            found = next(
                ((text, mode, family) for text, mode, family in self._candidates() if rest.startswith(text)), None
            )
            if found is not None:
                text, mode, family = found
                out.append(("reasoning", ""))
                self._consume(blank + len(text))
                self._mode, self._family, self._marker_seen = mode, family, True
                self._fresh = mode == "reasoning"
                continue
            if not rest or self._could_open(rest):
                return out
            if self._mode == "after":
                self._consume(blank)  # the blank lines after the thinking are the marker's
            self._mode = "answer"

    def _candidates(self) -> Iterator[tuple[str, _Mode, MarkerSet]]:
        """What may come next in an opening: a thinking's start, or an answer's header (and after a thinking,
        another thinking's header)."""
        if self._mode == "opening":
            for family in self._markers:
                yield family.start, "reasoning", family
                for header in family.openings:
                    yield header, "answer", family
        else:
            for header in self._family.openings:
                yield header, "answer", self._family
            for header in self._family.reopenings:
                yield header, "reasoning", self._family

    def _could_open(self, rest: str) -> bool:
        return any(text.startswith(rest) for text, _, _ in self._candidates())

    def _release(self, event: TokenEvent, segments: list[_Segment], tail_only: bool = False) -> list[EngineEvent]:
        """The waiting events and `event`, each with its part: waiting tokens carry "" (a marker's when one was
        read, else the answer's start, whose text the last token carries); `event` the first segment, and each
        later part follows as an event of token_id -1."""
        merged: list[_Segment] = []
        for part, text in segments:
            if merged and merged[-1][0] == part:
                merged[-1] = (part, merged[-1][1] + text)
            elif not merged or text:
                merged.append((part, text))
        marker = self._marker_seen or self._waiting_since == "after" or self._mode in ("reasoning", "after")
        default: TokenPart = "reasoning" if marker else "answer"
        out: list[EngineEvent] = []
        for waiting in self._waiting:
            out.append(
                self._mark(
                    dataclasses.replace(waiting, text="", part=default) if isinstance(waiting, TokenEvent) else waiting,
                    token=True,
                )
            )
        self._waiting, self._marker_seen, self._waiting_since = [], False, "opening"
        first = merged[0] if merged else (default, "")
        if not tail_only or first[1]:
            out.append(self._mark(dataclasses.replace(event, text=first[1], part=first[0]), token=not tail_only))
        for part, text in merged[1:]:
            out.append(self._mark(TokenEvent(event.request_id, event.index, -1, text, "target", part=part)))
        return out

    def _is_token(self, event: TokenEvent) -> bool:
        return event.token_id >= 0 or not self._ids

    def _mark(self, event: EngineEvent, token: bool = False) -> EngineEvent:
        """Count an event out: its text to its part, its round's drafts to the part of the round's first token."""
        if isinstance(event, RoundEvent):
            self._rounds[event.index] = (event.drafted, event.accepted)
            return event
        if not isinstance(event, TokenEvent):
            return event
        (self._reasoning if event.part == "reasoning" else self._answer).append(event.text)
        if event.part == "answer" and event.text and self._answer_at is None:
            self._answer_at = self._clock()
        if event.part == "reasoning" and token and self._is_token(event):
            self.reasoning_tokens += 1
        drafted, accepted = self._rounds.pop(event.round, (0, 0))
        if event.part == "reasoning":
            self.reasoning_drafted += drafted
            self.reasoning_accepted += accepted
        self._last_index = event.index
        return event

    def _next_index(self) -> int:
        return self._last_index + 1

    # -- the held text -------------------------------------------------------------------------------------------

    def _visible(self, end: int) -> str:
        """The held text up to `end` as it shows: special tokens' names left out."""
        shown, at = [], 0
        for a, b in self._special:
            if a >= end:
                break
            shown.append(self._held[at:a])
            at = max(at, b)
        shown.append(self._held[at:end] if at < end else "")
        return "".join(shown)

    def _consume(self, n: int) -> None:
        if n <= 0:
            return
        self._held = self._held[n:]
        self._special = [(a - n, b - n) for a, b in self._special if b > n]
        self._special = [(max(a, 0), b) for a, b in self._special]


def _held_from(text: str, marker: str) -> int:
    """Where the text that must wait begins: a suffix that may be the start of `marker`, and the blanks before it
    (blanks before a marker are the marker's)."""
    at = len(text)
    for n in range(min(len(marker) - 1, len(text)), 0, -1):
        if marker.startswith(text[-n:]):
            at = len(text) - n
            break
    while at > 0 and text[at - 1].isspace():
        at -= 1
    return at


def turn_end_closes_thinking(finished: FinishedEvent, unclosed: bool) -> FinishedEvent:
    """`finished` as it is read when its thinking was `unclosed` at the end (no end marker came).

    A model that wrote its end-of-turn token inside its thinking closed the thinking by ending: what it wrote is its
    answer, as llama-server's reasoning parser reads an unclosed block at the end, shown, copied and kept in the next
    turn's context. A reply that really stopped mid-thought (Stop, max tokens, a full context) keeps its thinking as
    thinking, with no answer yet: Continue goes on from there."""
    stats = finished.stats
    if not unclosed or stats.stop_reason != "eos" or finished.text.strip() or not finished.reasoning.strip():
        return finished
    return dataclasses.replace(
        finished,
        text=finished.reasoning,
        reasoning="",
        stats=dataclasses.replace(
            stats,
            ended_in_reasoning=False,
            thinking_unclosed=True,
            reasoning_tokens=0,
            reasoning_drafted=0,
            reasoning_accepted=0,
            reasoning_s=0.0,
        ),
    )


def split_reply(events: Iterable[EngineEvent], splitter: Optional[ReplySplitter] = None) -> Iterator[EngineEvent]:
    """A reply's events with each token's part told (FinishedEvent's text, reasoning and thinking stats set): for
    an engine whose tokens come as text, e.g. a server's (by default `<think>` at a reply's start, every event a
    token). Events the server already marked as reasoning (its reasoning_content) pass as they are."""
    splitter = splitter if splitter is not None else ReplySplitter(ids=False)
    for event in events:
        yield from splitter.feed(event)
