"""Deciding, round by round, who drafts and how many tokens.

`FixedPolicy` always asks for k tokens (experiments, and the behaviour of every other tool). The cost-model
controller in `app.engine.speculation.controller` chooses k to maximise expected tokens per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Optional, Protocol, Sequence

from app.engine.events import Drafter

if TYPE_CHECKING:
    from app.engine.speculation.drafters import Draft

# Why a plan is what it is: drafting expected to pay ("draft"), a short trial draft while paused ("probe"),
# a fixed length ("fixed"), no draft because drafting would not pay ("paused", "costly") or cannot happen
# ("unavailable": no room, nothing to draft from, speculation off), or none while one token is timed ("timing").
PlanKind = Literal["draft", "probe", "fixed", "paused", "costly", "unavailable", "timing"]


@dataclass(frozen=True)
class Plan:
    drafter: Drafter
    k: int
    reason: str = ""  # in words, for the status line
    match_len: int = 0  # copy plans (n-gram, history): the length of the match the proposal came from
    expected: float = 0.0  # auto plans: how many of the k tokens the controller expects to be accepted
    # Draft-model plans: stop the draft early where the draft's own confidence (an AdaEDL bound, see
    # app.engine.local.model_drafter.acceptance_bound) falls below this; 0 drafts all k.
    stop_below: float = 0.0
    kind: PlanKind = "unavailable"


def agreement(proposal: Sequence[int], produced: Sequence[int]) -> int:
    """How many leading tokens of a proposal the target produced too."""
    n = min(len(proposal), len(produced))
    agree = 0
    while agree < n and proposal[agree] == produced[agree]:
        agree += 1
    return agree


class SpeculationPolicy(Protocol):
    def plan(self, k_max: int, ngram_tokens: Sequence[int], has_model: bool, ngram_match: int = 0,
             history: Optional[Draft] = None, model_behind: int = 0) -> Plan:
        """Choose the drafter and draft length for the next round (k_max bounds k by context and max_tokens).
        `history`: the history drafter's proposal, when it has one. `model_behind`: how many tokens the draft
        model would read before drafting (the whole prompt before its first draft of a reply)."""

    def observe(self, plan: Plan, drafted: int, accepted: int, draft_s: float, verify_s: float) -> None:
        """Learn from the round that just ran with `plan`."""

    def observe_proposal(self, match_len: int, proposal: Sequence[int], produced: Sequence[int],
                         source: str = "ngram") -> None:
        """Learn how the round's proposal by a copying drafter ("ngram" or "history") compared with the tokens the
        target produced (drafted or not)."""

    def begin_request(self) -> None:
        """A new request (reply) starts."""

    def note_threads(self, threads: int) -> None:
        """The next round's forward passes run on this many CPU threads (app.engine.local.thread_governor)."""


class FixedPolicy:
    """Always draft `k` tokens with the given drafter ("model", "ngram" or "history": history where it has a
    proposal, n-gram lookup where not); no draft, no speculation."""

    def __init__(self, k: int, drafter: Drafter):
        self.k = k
        self.drafter = drafter

    def plan(self, k_max: int, ngram_tokens: Sequence[int], has_model: bool, ngram_match: int = 0,
             history: Optional[Draft] = None, model_behind: int = 0) -> Plan:
        k = min(self.k, k_max)
        if self.drafter == "history" and history is not None and history.tokens:
            return Plan("history", min(k, len(history.tokens)), f"fixed draft length {self.k}", history.match_len,
                        kind="fixed")
        if self.drafter in ("ngram", "history"):
            if not ngram_tokens:
                return Plan("none", 0, "no earlier occurrence of the last tokens to copy from")
            return Plan("ngram", min(k, len(ngram_tokens)), f"fixed draft length {self.k}", kind="fixed")
        if self.drafter == "model" and has_model:
            return Plan("model", k, f"fixed draft length {self.k}", kind="fixed")
        return Plan("none", 0, "no drafter available")

    def observe(self, plan: Plan, drafted: int, accepted: int, draft_s: float, verify_s: float) -> None:
        pass

    def observe_proposal(self, match_len: int, proposal: Sequence[int], produced: Sequence[int],
                         source: str = "ngram") -> None:
        pass

    def begin_request(self) -> None:
        pass

    def note_threads(self, threads: int) -> None:
        pass
