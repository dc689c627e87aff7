"""Draft lengths for a batch: each sequence's draft chosen so that the step's expected tokens per second, over
every sequence decoded in it, is highest.

A step is one forward pass of R rows: each decoding sequence's last token and its draft, and any prompt being
read. Each drafted row costs what it adds to the pass (verify(R + 1) - verify(R)) and, for the draft model, one
drafted token's cost: the draft model drafts for every sequence in one pass per position, but a small quantized
draft model on a CPU is bound by arithmetic, so its rows cost about what they would alone (with a pass's cost
per position, and the draft's cost learned only from requests drafting alone, Auto's 4 requests on the F16 target
ran at 0.76x plain; docs/performance.md, Many requests at once). Rows are handed out one at a time to the sequence whose next drafted token is expected to give the most
per second of what it adds; the step keeps the allocation where tokens per second peaked. On a CPU, where a
batch of n rows costs nearly n single tokens, drafts shrink as sequences join and stop where they no longer pay; on
memory-bound hardware (an F16 target, a GPU) rows are nearly free and drafts stay.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Candidate:
    """One decoding sequence's draft as its own policy planned it: `gains[j - 1]` tokens are expected kept from a
    draft of j (j = 1..len(gains)); `fixed`: a length not to change (a fixed setting, a probe); `model`: drafted
    by the draft model."""

    k: int
    gains: tuple[float, ...] = ()
    model: bool = False

    @property
    def fixed(self) -> bool:
        return self.k > 0 and not self.gains


def _gain(candidate: Candidate, j: int) -> float:
    return candidate.gains[j - 1] if j > 0 else 0.0


def allocate(
    candidates: Sequence[Candidate], base_rows: int, cost: Callable[[int, int], float], max_rows: int
) -> list[int]:
    """Each candidate's draft length, at most its own k. `base_rows`: the step's rows without any draft (a row
    per decoding sequence, and prompt rows); `cost(rows, draft_tokens)`: seconds of a step; `max_rows`: the most
    drafted rows the step may hold in all. Fixed lengths are kept as they are (within max_rows)."""
    # cost(rows, draft_tokens): the pass of `rows` rows and `draft_tokens` tokens drafted by the draft model.
    ks = [0] * len(candidates)
    rows = base_rows
    for i, c in enumerate(candidates):
        if c.fixed and rows - base_rows + c.k <= max_rows:
            ks[i] = c.k
            rows += c.k

    def passes() -> int:
        return sum(ks[i] for i, c in enumerate(candidates) if c.model)

    def expected() -> float:
        return len(candidates) + sum(_gain(c, ks[i]) if not c.fixed else 0.0 for i, c in enumerate(candidates))

    best = list(ks)
    best_rate = expected() / cost(rows, passes())
    while rows - base_rows < max_rows:
        now = cost(rows, passes())
        choice, choice_value = -1, 0.0
        for i, c in enumerate(candidates):
            if c.fixed or ks[i] >= c.k:
                continue
            gain = _gain(c, ks[i] + 1) - _gain(c, ks[i])
            ks[i] += 1
            added = max(cost(rows + 1, passes()) - now, 1e-12)
            ks[i] -= 1
            if gain / added > choice_value:
                choice, choice_value = i, gain / added
        if choice < 0:
            break
        ks[choice] += 1
        rows += 1
        rate = expected() / cost(rows, passes())
        if rate > best_rate:
            best, best_rate = list(ks), rate
    return best
