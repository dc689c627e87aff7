"""Deciding, round by round, who drafts and how many tokens.

`FixedPolicy` always asks for k tokens (experiments, and the behaviour of every other tool). The cost-model
controller in `app.engine.speculation.auto_controller` chooses k to maximise expected tokens per second.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional, Protocol, Sequence

from app.engine.events import DraftSource, Drafter, RoundKind

if TYPE_CHECKING:
    from app.engine.speculation.costs import CostTable
    from app.engine.speculation.drafters import Draft


@dataclass(frozen=True)
class Plan:
    drafter: Drafter
    k: int
    reason: str = ""  # in words, for the status line
    match_len: int = 0  # copy plans (n-gram, history): the length of the match the proposal came from
    expected: float = 0.0  # auto plans: how many of the k tokens the controller expects to be accepted
    # Draft-model plans: stop the draft early where the draft's own confidence (an AdaEDL bound, see
    # app.engine.local.decoding.model_drafter.acceptance_bound) falls below this; 0 drafts all k.
    stop_below: float = 0.0
    kind: RoundKind = "unavailable"


@dataclass(frozen=True)
class PolicyState:
    """What a policy decides by, as it stands now: for a debug view, the inspector or a test. Frozen: a copy.

    Rates are chances that a drafted token is kept given the ones before it were, per draft position; costs are
    seconds per forward pass as the controller sees them now (the table, scaled by what rounds cost).
    """

    fixed_k: Optional[int] = None  # a fixed-length policy's k; None for the auto controller
    drafter: Drafter = "none"  # a fixed policy's drafter; "model" or "ngram" for the controller (with a model or not)
    costs_estimated: bool = False  # deciding by the estimate to start from, not a measured table
    verify_s: tuple[float, ...] = ()  # a verify batch of n tokens, n = 1, 2, ... (index 0 is one token)
    draft_s: float = 0.0  # the draft model's cost per token (0 without one)
    threads: int = 0  # the CPU threads the costs are for (0: not told yet)
    model_rates: tuple[float, ...] = ()  # the draft model's acceptance per position
    # Per copying drafter and match length bucket (0 = a resumed copy, else 2, 3, 4, 8, 16, 32 tokens and more):
    # the acceptance at the first position, for the buckets seen in this reply.
    copy_rates: tuple[tuple[DraftSource, int, float], ...] = ()
    # Per drafter: accepted / expected over its recent drafts (1.0: the estimates were right).
    calibration: tuple[tuple[DraftSource, float], ...] = ()
    stop_below: float = 0.0  # where the draft model's own confidence stops its draft
    probe_gap: int = 0  # rounds between probes while paused
    paused_rounds: int = 0  # rounds since the last draft or probe


def agreement(proposal: Sequence[int], produced: Sequence[int]) -> int:
    """How many leading tokens of a proposal the target produced too."""
    n = min(len(proposal), len(produced))
    agree = 0
    while agree < n and proposal[agree] == produced[agree]:
        agree += 1
    return agree


class SpeculationPolicy(Protocol):
    """Decides each round's drafter and length. `uses_costs`: whether it decides by a cost table (then the engine
    hands it measured tables with `use_costs`); `wants_fresh_costs`: whether its rounds showed its measured table
    wrong (measured while another program held the CPU), so the table should be measured again."""

    uses_costs: bool

    @property
    def wants_fresh_costs(self) -> bool: ...

    def use_costs(self, table: CostTable) -> None:
        """Decide by this table from now on."""

    def describe(self) -> PolicyState:
        """What it decides by, as it stands now."""

    def plan(
        self,
        k_max: int,
        ngram_tokens: Sequence[int],
        has_model: bool,
        ngram_match: int = 0,
        history_draft: Optional[Draft] = None,
        model_behind: int = 0,
    ) -> Plan:
        """Choose the drafter and draft length for the next round (k_max bounds k by context and max_tokens).
        `history_draft`: the history drafter's proposal, when it has one. `model_behind`: how many tokens the draft
        model would read before drafting (the whole prompt before its first draft of a reply)."""

    def observe(self, plan: Plan, drafted: int, accepted: int, draft_s: float, verify_s: float, rows: int = 0) -> None:
        """Learn from the round that just ran with `plan`. `rows`: the forward pass's rows when it held other
        requests' too (0: drafted + 1), which `verify_s` is the cost of."""

    def observe_proposal(
        self, match_len: int, proposal: Sequence[int], produced: Sequence[int], source: DraftSource = "ngram"
    ) -> None:
        """Learn how the round's proposal by a copying drafter ("ngram" or "history") compared with the tokens the
        target produced (drafted or not)."""

    def expected_accepted(self, plan: Plan) -> tuple[float, ...]:
        """For a plan of k drafted tokens: how many are expected kept with a draft of 1..k of them; () when the
        plan's length is not the policy's to shorten (a fixed length, a probe, no draft)."""

    def step_cost(self, rows: int, draft_tokens: int = 0) -> float:
        """Seconds one forward pass of `rows` rows costs now, plus `draft_tokens` draft-model passes (0.0: the
        policy keeps no costs)."""

    def catch_up_cost(self, behind: int) -> float:
        """Seconds the draft model takes to read the `behind` tokens it lacks before drafting (0.0: the policy
        keeps no costs)."""

    def begin_request(self) -> None:
        """A new request (reply) starts."""

    def note_threads(self, threads: int) -> None:
        """The next round's forward passes run on this many CPU threads (app.engine.local.thread_governor)."""


class FixedPolicy:
    """Always draft `k` tokens with the given drafter ("model", "ngram" or "history": history where it has a
    proposal, n-gram lookup where not); no draft, no speculation."""

    uses_costs = False
    wants_fresh_costs = False

    def __init__(self, k: int, drafter: DraftSource):
        self.k = k
        self.drafter = drafter

    def use_costs(self, table: CostTable) -> None:
        pass

    def describe(self) -> PolicyState:
        return PolicyState(fixed_k=self.k, drafter=self.drafter)

    def plan(
        self,
        k_max: int,
        ngram_tokens: Sequence[int],
        has_model: bool,
        ngram_match: int = 0,
        history_draft: Optional[Draft] = None,
        model_behind: int = 0,
    ) -> Plan:
        k = min(self.k, k_max)
        if self.drafter == "history" and history_draft is not None and history_draft.tokens:
            return Plan(
                "history",
                min(k, len(history_draft.tokens)),
                f"fixed draft length {self.k}",
                history_draft.match_len,
                kind="fixed",
            )
        if self.drafter in ("ngram", "history"):
            if not ngram_tokens:
                return Plan("none", 0, "no earlier occurrence of the last tokens to copy from")
            return Plan("ngram", min(k, len(ngram_tokens)), f"fixed draft length {self.k}", kind="fixed")
        if self.drafter == "model" and has_model:
            return Plan("model", k, f"fixed draft length {self.k}", kind="fixed")
        return Plan("none", 0, "no drafter available")

    def observe(self, plan: Plan, drafted: int, accepted: int, draft_s: float, verify_s: float, rows: int = 0) -> None:
        pass

    def observe_proposal(
        self, match_len: int, proposal: Sequence[int], produced: Sequence[int], source: DraftSource = "ngram"
    ) -> None:
        pass

    def expected_accepted(self, plan: Plan) -> tuple[float, ...]:
        return ()

    def step_cost(self, rows: int, draft_tokens: int = 0) -> float:
        return 0.0

    def catch_up_cost(self, behind: int) -> float:
        return 0.0

    def begin_request(self) -> None:
        pass

    def note_threads(self, threads: int) -> None:
        pass
