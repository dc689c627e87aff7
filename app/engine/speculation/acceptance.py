"""What drafts have been kept: per-position acceptance estimates, and the copying drafters' by match length.

The speculation controller (app.engine.speculation.auto_controller) turns these into expected tokens per round;
here they are only learned. A draft model's estimates are kept per chat; a copying drafter's (n-gram lookup,
history) start afresh with each reply, grouped by the length of the match each proposal came from.
"""

from __future__ import annotations

from typing import Sequence

from app.engine.events import DraftSource
from app.engine.speculation.policy import agreement

MAX_K = 63  # verify batches up to 64 (app.engine.speculation.costs.MAX_BATCH), the most logit rows one decode has
MIN_EVIDENCE = 3  # outcomes a position needs before its own estimate is trusted


class Acceptance:
    """Per-position acceptance estimates, exponentially weighted (recent rounds weigh more).

    Position i's rate is the chance draft token i is accepted given tokens 0..i-1 were. Positions never (or
    hardly) tested take the rate of the deepest tested one: with short drafts only, deep positions would otherwise
    sit at the prior forever and the controller could never learn that longer drafts pay (copying text, where
    one accepted token makes the next very likely).
    """

    def __init__(self, prior: float, decay: float = 0.85):
        self._rates = [prior] * MAX_K
        self._evidence = [0] * MAX_K
        self.decay = decay

    def observe(self, drafted: int, accepted: int) -> None:
        # Positions up to the first rejection are outcomes; positions after it were never tested.
        for i in range(min(drafted, accepted + 1, MAX_K)):
            outcome = 1.0 if i < accepted else 0.0
            self._rates[i] = self.decay * self._rates[i] + (1.0 - self.decay) * outcome
            self._evidence[i] += 1

    def known(self, position: int) -> bool:
        return self._evidence[position] >= MIN_EVIDENCE

    @property
    def rates(self) -> list[float]:
        rates = list(self._rates)
        for i in range(1, MAX_K):
            if self._evidence[i] < MIN_EVIDENCE:
                rates[i] = rates[i - 1]
        return rates

    def expected_tokens(self, k: int, rates: Sequence[float] | None = None) -> float:
        rates = rates or self.rates
        total, run = 1.0, 1.0
        for i in range(k):
            run *= rates[i]
            total += run
        return total

    def overall(self) -> float:
        return self._rates[0]


# Before any evidence: a 2-token match is often a coincidence, a 32-token one is nearly always text being copied.
# Bucket 0 holds guesses that copying resumes after an edit (see NgramDrafter): few have their first token right
# (an edit is often longer than one token), so they wait for evidence. Matches of 32+ tokens start at the bench
# suite's hit rate; shorter ones below theirs, since a 16-31 token match is right at its first token but often not
# 15 tokens later, where a rename not yet learned comes. The hit rates and replays: docs/performance.md.
_NGRAM_PRIOR = {0: 0.25, 2: 0.5, 3: 0.6, 4: 0.7, 8: 0.8, 16: 0.9, 32: 0.98}
# History proposals come from another request: a match is likelier a shared phrase than text being copied, so they
# start lower, and the history drafter itself only proposes what most past copies agreed on. A match of 32 tokens
# (HistoryDrafter.MAX_MATCH) is no phrase: it is text written again (a regenerated reply), as sure as an n-gram
# match that long. In the replay no history match between different prompts reached 16 tokens, and at 0.9 a
# regenerated reply was drafted 15 tokens at a time where every token of it was right (docs/performance.md).
_HISTORY_PRIOR = {0: 0.25, 2: 0.3, 3: 0.35, 4: 0.5, 8: 0.65, 16: 0.8, 32: 0.98}
_COPY_PRIORS: dict[DraftSource, dict[int, float]] = {"ngram": _NGRAM_PRIOR, "history": _HISTORY_PRIOR}


def _match_bucket(match_len: int) -> int:
    """N-gram matches grouped by length: 2, 3, 4-7, 8-15, 16-31, 32+ tokens; 0 is a resumed copy."""
    for bucket in (32, 16, 8, 4, 3, 2):
        if match_len >= bucket:
            return bucket
    return 0


class CopyAcceptance:
    """The copying drafters' (n-gram lookup, history) proposals scored against what the target produced: estimates
    per drafter and match-length bucket, and per drafter the tokens its proposals have been right about since one
    was last wrong. A 6-token match that recurs is usually copied text and right, a 2-token match often a
    coincidence."""

    def __init__(self) -> None:
        self._by_match: dict[tuple[DraftSource, int], Acceptance] = {}
        self._runs: dict[DraftSource, int] = {}

    def for_match(self, match_len: int, source: DraftSource = "ngram") -> Acceptance:
        """The estimates of `source`'s proposals from matches of this length."""
        key = (source, _match_bucket(match_len))
        if key not in self._by_match:
            self._by_match[key] = Acceptance(prior=_COPY_PRIORS[source][key[1]])
        return self._by_match[key]

    def run(self, source: DraftSource) -> int:
        """Tokens `source`'s proposals have been right about in a row."""
        return self._runs.get(source, 0)

    def first_rates(self) -> tuple[tuple[DraftSource, int, float], ...]:
        """(drafter, bucket, first position's rate) for every bucket seen, in order."""
        return tuple((source, bucket, acc.rates[0]) for (source, bucket), acc in sorted(self._by_match.items()))

    def score(self, match_len: int, proposal: Sequence[int], produced: Sequence[int], source: DraftSource) -> None:
        """Score a proposal against the tokens the round actually produced, drafted or not."""
        if not proposal:
            return
        agree = agreement(proposal, produced)
        broken = agree < min(len(proposal), len(produced))
        self._runs[source] = 0 if broken else self._runs.get(source, 0) + agree
        # Positions past the first disagreement (or past what was produced) were not tested.
        self.for_match(match_len, source).observe(agree + broken, agree)

    def clear(self) -> None:
        self._by_match.clear()
        self._runs.clear()
