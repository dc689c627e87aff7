"""Draft lengths for a batch: each sequence's draft chosen so that the step's expected tokens per second, over
every sequence decoded in it, is highest, and no sequence is expected to write slower than with no drafts.

A step is one forward pass of R rows: each decoding sequence's last token and its draft, and any prompt being
read. Each drafted row costs what it adds to the pass (verify(R + 1) - verify(R)) and, for the draft model, one
drafted token's cost: the draft model drafts for every sequence in one pass per position, but a small quantized
draft model on a CPU is bound by arithmetic, so its rows cost about what they would alone (with a pass's cost
per position, and the draft's cost learned only from requests drafting alone, Auto's 4 requests on the F16 target
ran at 0.76x plain; docs/performance.md, Many requests at once). Rows are handed out one at a time to the sequence
whose next drafted token is expected to give the most per second of what it adds; the step keeps the allocation
where tokens per second peaked. On a CPU, where a batch of n rows costs nearly n single tokens, drafts shrink as
sequences join and stop where they no longer pay; on memory-bound hardware (an F16 target, a GPU) rows are nearly
free and drafts stay.

Nobody slower (`fair`): a draft makes the whole step dearer, so it slows every other sequence in the batch. A
request whose text the drafters cannot predict would then write slower than with speculation off, for the sake of
one that copies well: a person's chat beside an agent's reply, or a burst of requests, which lasts as long as its
slowest one (drafting for the predictable request of four made Auto's burst 2-9% slower than plain batching,
docs/performance-log.md). So a step's drafts must leave every sequence its plain-batching pace: its expected
tokens over the step's cost at least 1 over the cost without drafts. Drafts pass where every sequence in the step
drafts and gains enough to pay for the rows all of them add (the draft model proposing for every request on a GPU
or a memory-bound target); a draft that pays only for the one drafting does not, even where rows are nearly free.
A request reading its prompt in the step counts too: it gains nothing from a draft, and its first token waits for
every step (through `serve`, four requests sent at once reach the engine one after another, and the first one's
drafts delayed the others' first tokens by 0.6-3.6 s on the F16 target).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from app.engine.speculation.policy import Plan, SpeculationPolicy

Cost = Callable[[int, int], float]  # (rows, draft_tokens) -> seconds of a step


@dataclass(frozen=True)
class Candidate:
    """One decoding sequence's draft as its own policy planned it: `gains[j - 1]` tokens are expected kept from a
    draft of j (j = 1..len(gains)); `fixed`: a length not to change (a fixed setting, a probe); `model`: drafted
    by the draft model, which first reads what it lacks (`catch_up`, paid once whatever the draft's length)."""

    k: int
    gains: tuple[float, ...] = ()
    model: bool = False
    catch_up: float = 0.0  # seconds the draft model reads what it lacks before its first drafted token

    @property
    def fixed(self) -> bool:
        return self.k > 0 and not self.gains


def _gain(candidate: Candidate, j: int) -> float:
    return candidate.gains[j - 1] if j > 0 else 0.0


class _Step:
    """An allocation being built: each candidate's draft length, the step's rows and its expected tokens."""

    def __init__(self, candidates: Sequence[Candidate], base_rows: int, cost: Cost, max_rows: int, readers: int = 0):
        self.candidates, self.cost, self.base_rows, self.max_rows = candidates, cost, base_rows, max_rows
        self.readers = readers
        self.ks = [0] * len(candidates)
        for i, c in enumerate(candidates):
            if c.fixed and sum(self.ks) + c.k <= max_rows:
                self.ks[i] = c.k
        self.plain_cost = self.now = self.seconds()  # the step with no draft but the fixed ones; the step as it stands

    def passes(self, ks: Optional[list[int]] = None) -> int:
        ks = self.ks if ks is None else ks
        return sum(ks[i] for i, c in enumerate(self.candidates) if c.model)

    def seconds(self, ks: Optional[list[int]] = None) -> float:
        ks = self.ks if ks is None else ks
        rows = self.base_rows + sum(ks)
        reading = sum(c.catch_up for i, c in enumerate(self.candidates) if c.model and ks[i])
        return self.cost(rows, self.passes(ks)) + reading

    def rate(self) -> float:
        gains = sum(_gain(c, self.ks[i]) for i, c in enumerate(self.candidates) if not c.fixed)
        return (len(self.candidates) + gains) / self.now

    def nobody_slower(self) -> bool:
        """Every sequence whose draft is the step's to choose writes at least its pace with no drafts."""
        gains = [_gain(c, self.ks[i]) for i, c in enumerate(self.candidates) if not c.fixed] + [0.0] * self.readers
        return not gains or self.now <= self.plain_cost * (1.0 + min(gains)) * (1.0 + 1e-9)

    def growable(self) -> list[int]:
        if sum(self.ks) >= self.max_rows:
            return []
        return [i for i, c in enumerate(self.candidates) if not c.fixed and self.ks[i] < c.k]

    def value(self, i: int) -> float:
        """What one more drafted row for candidate i gives per second it adds."""
        c = self.candidates[i]
        gain = _gain(c, self.ks[i] + 1) - _gain(c, self.ks[i])
        more = list(self.ks)
        more[i] += 1
        added = max(self.seconds(more) - self.now, 1e-12)
        return gain / added

    def grow(self, i: int) -> None:
        self.ks[i] += 1
        self.now = self.seconds()


def _search(
    step: _Step, pick: Callable[[_Step, list[int], dict[int, float]], int], fair: bool
) -> tuple[list[int], float]:
    """Grow the allocation a row at a time by `pick`; the best allocation seen (by rate, kept only where nobody is
    slower when `fair`) and its rate."""
    best, best_rate = list(step.ks), step.rate()
    while True:
        values = {i: step.value(i) for i in step.growable()}
        choices = [i for i, v in values.items() if v > 0.0]
        if not choices:
            return best, best_rate
        step.grow(pick(step, choices, values))
        rate = step.rate()
        if rate > best_rate and (not fair or step.nobody_slower()):
            best, best_rate = list(step.ks), rate


def _most_per_second(step: _Step, choices: list[int], values: dict[int, float]) -> int:
    return max(choices, key=values.__getitem__)


def _least_ahead(step: _Step, choices: list[int], values: dict[int, float]) -> int:
    """The sequence expected to gain least so far (then the one whose row gives most): every sequence's draft grows
    together, which is what lets drafts pass where each one must gain."""
    return min(choices, key=lambda i: (_gain(step.candidates[i], step.ks[i]), -values[i]))


def allocate(
    candidates: Sequence[Candidate], base_rows: int, cost: Cost, max_rows: int, fair: bool = False, readers: int = 0
) -> list[int]:
    """Each candidate's draft length, at most its own k. `base_rows`: the step's rows without any draft (a row
    per decoding sequence, and prompt rows); `cost(rows, draft_tokens)`: seconds of a step of `rows` rows and
    `draft_tokens` tokens drafted by the draft model; `max_rows`: the most drafted rows the step may hold in all.
    Fixed lengths are kept as they are (within max_rows). `fair`: nobody slower (the module's docstring), the
    `readers` (requests reading their prompt in this step, which gain nothing from a draft) included."""
    found = [_search(_Step(candidates, base_rows, cost, max_rows, readers), _most_per_second, fair)]
    if fair:
        found.append(_search(_Step(candidates, base_rows, cost, max_rows, readers), _least_ahead, fair))
    return max(found, key=lambda f: f[1])[0]


def fit_plans(
    rounds: Sequence[tuple[SpeculationPolicy, Plan]],
    base_rows: int,
    max_rows: int,
    fair: bool = True,
    behind: Sequence[int] = (),
    readers: int = 0,
) -> list[Plan]:
    """The plans of one step's rounds, each shortened where the step does better without its rows (kind "batch",
    with the reason in words). The costs are those of the first policy that keeps any; with none, a row costs
    one. `behind`: per round, the tokens the draft model would read before drafting for it (side by side, Auto's
    draft model reads a request's text only when it drafts for it). `readers`: requests reading their prompt in
    this step, which a draft must not slow either."""
    coster = next((policy for policy, _ in rounds if policy.uses_costs), None)
    cost: Cost = coster.step_cost if coster is not None else lambda rows, passes: float(rows)
    lacking = list(behind) + [0] * (len(rounds) - len(behind))
    candidates = [
        Candidate(
            plan.k,
            policy.expected_accepted(plan),
            plan.drafter == "model",
            policy.catch_up_cost(lacking[i]) if plan.drafter == "model" else 0.0,
        )
        for i, (policy, plan) in enumerate(rounds)
    ]
    plans = []
    for (_, plan), k in zip(rounds, allocate(candidates, base_rows, cost, max_rows, fair, readers)):
        if k < plan.k:
            reason = f"{plan.drafter} draft cut from {plan.k} to {k}: {len(rounds)} requests share the batch"
            plan = (
                dataclasses.replace(plan, k=k, reason=reason, kind="batch")
                if k
                else Plan("none", 0, reason, kind="batch")
            )
        plans.append(plan)
    return plans
