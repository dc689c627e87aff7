"""The numbers of the per-reply inspector, from a reply's recorded rounds (no Qt, no engine).

Per round: what was drafted and kept. Per draft position i: how often the i-th drafted token was kept. Tokens
against time, beside the line plain decoding would have drawn, and what speculation saved or cost. The draft-length
histogram. The window draws these (app/ui/inspector/charts.py); tests check them here without Qt.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Mapping, Optional, Sequence

from app.common.units import plural
from app.engine.events import DRAFT_SOURCES, GenerationStats
from app.replies.drafter_words import DRAFTER_WORDS, PLAIN_LABEL
from app.replies.stats import thinking_split
from app.store.provenance import RoundRecord

# Drafter names as RoundRecord stores them (app.engine.events' table), and how the inspector says them.
DRAFTERS = DRAFT_SOURCES  # who may draft a round, in the order charts and legends list them
MODEL, NGRAM, HISTORY = DRAFTERS
PLAIN = "none"
# Their labels, from the one table of drafter words, with the rounds nobody drafted.
DRAFTER_NAMES: dict[str, str] = {**{d: DRAFTER_WORDS[d].label for d in DRAFTERS}, PLAIN: PLAIN_LABEL}
# A round that drafted is set against this many plain rounds, the closest to it (app.replies.inspector_data).
NEARBY_PLAIN = 5
# Plain rounds this many times slower than the fastest of the reply: the machine's load changed during it.
BUSY_SPREAD = 3.0
# Why rounds are what they are (RoundRecord.kind, app.engine.events.RoundKind), as the inspector says them, in the
# order it lists them.
KIND_NAMES = {
    "draft": "drafted where it was expected to pay",
    "probe": "probed whether drafts pay again",
    "fixed": "drafted a fixed length",
    "paused": "paused: drafts were kept too rarely to pay",
    "costly": "paused: verifying costs more than it saves here",
    "timing": "timed one token at a new thread count",
    "unavailable": "had nothing to draft from",
    "server": "as the server chose",
    "batch": "drafted less: other requests shared the batch",
}
# Histogram bars of a reply without rounds come from its stats, which do not say who drafted.
ANY_DRAFTER = "any"

NO_ROUNDS_SENTENCE = (
    "No rounds were recorded for this reply: it was written before SpecChat kept them, or by a "
    "server that does not report what it drafted."
)


@dataclass(frozen=True)
class RoundBar:
    """One round as the inspector draws it."""

    index: int
    drafter: str  # MODEL, NGRAM, HISTORY or PLAIN
    drafted: int
    kept: int
    tokens: int  # tokens the round added to the reply: the kept ones and the target's own
    time_s: float
    threads: int = 0  # the CPU threads it ran on (0: not recorded)
    kind: str = ""  # why the round is what it is (KIND_NAMES; "" where not recorded)
    expected: float = 0.0  # the tokens the controller expected to be kept


@dataclass(frozen=True)
class PositionAcceptance:
    """Of the `reached` rounds of one drafter that drafted at least `position` tokens, `accepted` kept that one."""

    drafter: str
    position: int  # 1-based
    reached: int
    accepted: int

    @property
    def fraction(self) -> float:
        return self.accepted / self.reached if self.reached else 0.0


@dataclass(frozen=True)
class PlainLine:
    """What plain decoding would have taken for the same tokens: the plain rounds as they were, each other round's
    tokens at the measured single-token time. Plain rounds are kept as measured so that what slowed them (another
    program, a cold cache) slows both lines alike, and the gap between the lines is what drafting changed."""

    token_s: float  # seconds per token without speculation
    basis: str  # where token_s comes from, in words
    times: tuple[float, ...]  # cumulative plain time at the end of each round, from 0 (the reply's `tokens` points)
    speculative_s: float  # what the rounds took
    load_note: str = ""  # when the machine's load changed during the reply, that, in words

    @property
    def plain_s(self) -> float:
        return self.times[-1]

    @property
    def saved_s(self) -> float:
        return self.plain_s - self.speculative_s

    @property
    def speedup(self) -> float:
        return self.plain_s / self.speculative_s if self.speculative_s > 0 else 0.0

    def verdict(self) -> str:
        """ "estimated: saved 2.3 s (1.4x)," or "estimated: cost 0.4 s," then, on a second line for the chart's
        width, "if plain decoding writes every token in 0.120 s" (rounded to a tenth; a saving that rounds to zero
        is no saving). An estimate, said as one: the plain line is worked out from this reply's own plain rounds,
        while Compare measures a second, plain run."""
        assumes = f"if plain decoding writes every token in {self.token_s:.3f} s"
        if round(self.saved_s, 1) > 0:
            return f"estimated: saved {self.saved_s:.1f} s ({self.speedup:.1f}x),\n{assumes}"
        return f"estimated: cost {max(0.0, -self.saved_s):.1f} s,\n{assumes}"


@dataclass
class ReplyInspection:
    """Everything the inspector shows of one reply. `bars` is empty when the reply has no recorded rounds."""

    bars: list[RoundBar] = field(default_factory=list)
    positions: list[PositionAcceptance] = field(default_factory=list)
    times: list[float] = field(default_factory=list)  # cumulative seconds at the end of each round, from 0
    tokens: list[int] = field(default_factory=list)  # cumulative tokens at the same points, from 0
    plain: Optional[PlainLine] = None
    plain_missing: str = ""  # why there is no plain line, when there is none
    histogram: dict[int, dict[str, int]] = field(default_factory=dict)  # draft length -> drafter -> rounds
    summary: str = ""

    @property
    def has_rounds(self) -> bool:
        return bool(self.bars)


def round_bars(rounds: Sequence[RoundRecord], token_rounds: Optional[Sequence[int]] = None) -> list[RoundBar]:
    """One bar per round. A round's tokens are counted from the reply's per-token rounds when it has them (the end
    of generation, or the max tokens limit, can drop the target's own token); otherwise kept + own."""
    counted: Optional[list[int]] = None
    if token_rounds:
        counted = [0] * len(rounds)
        for index in token_rounds:
            if 0 <= index < len(rounds):
                counted[index] += 1
    bars = []
    for index, record in enumerate(rounds):
        drafted = len(record.proposed)
        kept = max(0, min(record.kept, drafted))
        tokens = counted[index] if counted is not None else kept + (1 if record.own >= 0 else 0)
        drafter = record.drafter if record.drafter in DRAFTERS else PLAIN
        bars.append(
            RoundBar(
                index,
                drafter,
                drafted,
                kept,
                tokens,
                max(0.0, record.time_s),
                record.threads,
                record.kind,
                max(0.0, record.expected),
            )
        )
    return bars


def position_acceptance(bars: Sequence[RoundBar]) -> list[PositionAcceptance]:
    """Per drafter and draft position i (1..longest draft): rounds that drafted at least i tokens, and of those the
    ones whose i-th token was kept (acceptance is a prefix, so that is kept >= i)."""
    out = []
    for drafter in DRAFTERS:
        drafts = [bar for bar in bars if bar.drafter == drafter and bar.drafted]
        longest = max((bar.drafted for bar in drafts), default=0)
        for position in range(1, longest + 1):
            reached = [bar for bar in drafts if bar.drafted >= position]
            out.append(
                PositionAcceptance(drafter, position, len(reached), sum(1 for bar in reached if bar.kept >= position))
            )
    return out


def cumulative_series(bars: Sequence[RoundBar]) -> tuple[list[float], list[int]]:
    """Tokens against time: cumulative round time and cumulative tokens, both starting at 0."""
    times, tokens = [0.0], [0]
    for bar in bars:
        times.append(times[-1] + bar.time_s)
        tokens.append(tokens[-1] + bar.tokens)
    return times, tokens


def is_plain_round(bar: RoundBar) -> bool:
    """No draft work: the target alone. A draft model round that drafted nothing still paid for drafting."""
    return bar.drafter != MODEL and not bar.drafted


def plain_times(bars: Sequence[RoundBar], token_s: float) -> tuple[float, ...]:
    """Cumulative time plain decoding would have taken: plain rounds as measured, the others at `token_s` a token."""
    times = [0.0]
    for bar in bars:
        times.append(times[-1] + (bar.time_s if is_plain_round(bar) else bar.tokens * token_s))
    return tuple(times)


def plain_times_nearby(bars: Sequence[RoundBar], plain: Sequence[RoundBar]) -> tuple[float, ...]:
    """Cumulative time plain decoding would have taken: plain rounds as measured, each other round's tokens at the
    median time of the NEARBY_PLAIN plain rounds closest to it that ran on as many threads (any, where none did),
    so that a round is never set against plain time measured at another moment's load."""
    times = [0.0]
    for bar in bars:
        if is_plain_round(bar):
            times.append(times[-1] + bar.time_s)
            continue
        alike = [p for p in plain if p.threads == bar.threads] or list(plain)
        nearest = sorted(alike, key=lambda p: abs(p.index - bar.index))[:NEARBY_PLAIN]
        times.append(times[-1] + bar.tokens * statistics.median(p.time_s / p.tokens for p in nearest))
    return tuple(times)


def load_note(bars: Sequence[RoundBar], plain: Sequence[RoundBar]) -> str:
    """What changed in the machine's load during the reply, in words ("" when nothing did)."""
    counts: list[int] = []
    for bar in bars:
        if bar.threads and (not counts or counts[-1] != bar.threads):
            counts.append(bar.threads)
    if len(counts) > 1:
        return (
            f"The CPU threads changed during this reply ({' → '.join(map(str, counts))}): another program was "
            "busy for part of it. Each round is set against plain rounds close to it on as many threads."
        )
    single = sorted(p.time_s / p.tokens for p in plain)
    if len(single) >= 4 and single[-1] > BUSY_SPREAD * single[0]:
        return (
            f"Some plain rounds ran {single[-1] / single[0]:.0f}x slower than others: another program was "
            "busy for part of this reply. Each round is set against plain rounds close to it."
        )
    return ""


def plain_line(bars: Sequence[RoundBar], fallback_token_s: Optional[float] = None) -> tuple[Optional[PlainLine], str]:
    """The plain-decoding line and "" or None and why there is none. The reply's own plain rounds are preferred to
    `fallback_token_s` (a single-token time measured elsewhere, e.g. by Compare with plain)."""
    times, tokens = cumulative_series(bars)
    if not tokens[-1] or times[-1] <= 0:
        return None, "The rounds recorded no time, so there is nothing to compare with plain decoding."
    # The single-token time: plain rounds that wrote a token (the one that met the end of the reply wrote none).
    plain = [bar for bar in bars if is_plain_round(bar) and bar.tokens and bar.time_s > 0]
    if plain:
        token_s = statistics.median(bar.time_s / bar.tokens for bar in plain)
        basis = (
            f"median of this reply's {len(plain)} plain round{'s' if len(plain) != 1 else ''}; each round is "
            "set against the plain rounds closest to it"
        )
        return PlainLine(token_s, basis, plain_times_nearby(bars, plain), times[-1], load_note(bars, plain)), ""
    if fallback_token_s and fallback_token_s > 0:
        return PlainLine(
            fallback_token_s, "measured by Compare with plain", plain_times(bars, fallback_token_s), times[-1]
        ), ""
    return None, (
        "Every round drafted, so this reply has no plain round to measure plain decoding by; "
        "Compare with plain measures it."
    )


def draft_histogram(bars: Sequence[RoundBar], stats_histogram: Optional[Mapping] = None) -> dict[int, dict[str, int]]:
    """Rounds per draft length and drafter, from the rounds; without rounds, from the stats' histogram (whose keys
    come back from JSON as strings, and which does not say who drafted)."""
    histogram: dict[int, dict[str, int]] = {}
    if bars:
        for bar in bars:
            drafter = PLAIN if not bar.drafted and bar.drafter != MODEL else bar.drafter
            row = histogram.setdefault(bar.drafted, {})
            row[drafter] = row.get(drafter, 0) + 1
        return dict(sorted(histogram.items()))
    for key, count in (stats_histogram or {}).items():
        try:
            length, rounds = int(key), int(count)
        except (TypeError, ValueError):
            continue
        if length >= 0 and rounds > 0:
            histogram[length] = {PLAIN if length == 0 else ANY_DRAFTER: rounds}
    return dict(sorted(histogram.items()))


def summary_line(bars: Sequence[RoundBar], stats: Optional[GenerationStats]) -> str:
    """One line: "212 tokens in 48 rounds · 120 of 176 drafted tokens kept (68%) · draft model 30 rounds, ...",
    and for a reply that thought, a line splitting it into thinking and answer."""
    line = _rounds_summary(bars, stats)
    if stats is not None and stats.reasoning_tokens:
        split = thinking_split(stats)
        line += "\n" + split[0].upper() + split[1:]
    return line


def _rounds_summary(bars: Sequence[RoundBar], stats: Optional[GenerationStats]) -> str:
    if not bars:
        if stats is None:
            return ""
        parts = [f"{stats.tokens} tokens"]
        if stats.drafted:
            parts.append(f"{stats.accepted} of {stats.drafted} drafted tokens kept ({stats.acceptance_rate:.0%})")
        return "  ·  ".join(parts)
    tokens = sum(bar.tokens for bar in bars)
    drafted = sum(bar.drafted for bar in bars)
    kept = sum(bar.kept for bar in bars)
    parts = [f"{tokens} tokens in {len(bars)} round{'s' if len(bars) != 1 else ''}"]
    parts.append(f"{kept} of {drafted} drafted tokens kept ({kept / drafted:.0%})" if drafted else "nothing drafted")
    used = [
        f"{DRAFTER_NAMES[d]} {n} round{'s' if n != 1 else ''}"
        for d in (*DRAFTERS, PLAIN)
        if (n := sum(1 for bar in bars if bar.drafter == d))
    ]
    parts.append(", ".join(used))
    why = kinds_line(bars)
    return "  ·  ".join(parts) + (f"\n{why}" if why else "")


def kinds_line(bars: Sequence[RoundBar]) -> str:
    """Why the rounds were what they were: "Rounds: 30 drafted where it was expected to pay (kept 52 tokens where
    the controller expected about 61.0), 3 probed whether drafts pay again, 12 paused: drafts were kept too rarely to pay"; "" for a reply
    whose rounds did not record it."""
    if not any(bar.kind for bar in bars):
        return ""
    parts = []
    for kind, name in KIND_NAMES.items():
        of_kind = [bar for bar in bars if bar.kind == kind]
        if not of_kind:
            continue
        part = f"{len(of_kind)} {name}"
        expected = sum(bar.expected for bar in of_kind)
        if expected > 0:
            # Said as two numbers, never "kept 2 of 1 expected": the expectation is an estimate, and is exceeded.
            part += (
                f" (kept {plural(sum(bar.kept for bar in of_kind), 'token')} where the controller expected "
                f"about {expected:.1f})"
            )
        parts.append(part)
    return "Rounds: " + ", ".join(parts)


def reply_inspection(
    rounds: Optional[Sequence[RoundRecord]],
    token_rounds: Optional[Sequence[int]] = None,
    stats: Optional[GenerationStats] = None,
    fallback_token_s: Optional[float] = None,
) -> ReplyInspection:
    """Everything the inspector shows of one reply; a reply without rounds keeps only its stats' summary and
    histogram."""
    bars = round_bars(rounds or [], token_rounds)
    histogram = draft_histogram(bars, stats.draft_len_histogram if stats is not None else None)
    if not bars:
        return ReplyInspection(histogram=histogram, summary=summary_line(bars, stats))
    times, tokens = cumulative_series(bars)
    plain, missing = plain_line(bars, fallback_token_s)
    return ReplyInspection(
        bars=bars,
        positions=position_acceptance(bars),
        times=times,
        tokens=tokens,
        plain=plain,
        plain_missing=missing,
        histogram=histogram,
        summary=summary_line(bars, stats),
    )
