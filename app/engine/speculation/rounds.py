"""One speculative round's bookkeeping: propose, plan, and let the policy learn from what was kept.

The decoder (decoder.generate) and the controller's replay (tests/perf/replay.py) both run their rounds through
these functions, so a change here is seen by the replay's figures as well as by real generation.
"""

from __future__ import annotations

from typing import Optional, Sequence

from app.engine.speculation.drafters import Draft, NgramDrafter
from app.engine.speculation.policy import Plan, SpeculationPolicy

SPECULATION_OFF = "speculation is off for this chat"


def plan_round(policy: SpeculationPolicy, history: Sequence[int], k_max: int, *, speculative: bool,
               ngram: Optional[NgramDrafter], has_model: bool) -> tuple[Plan, Draft]:
    """(the plan, the n-gram proposal it was made from; empty when there is none)."""
    if not speculative:
        return Plan("none", 0, SPECULATION_OFF), Draft()
    proposal = ngram.propose(history, k_max) if ngram is not None else Draft()
    return policy.plan(k_max, proposal.tokens, has_model, proposal.match_len), proposal


def ngram_tokens(plan: Plan, proposal: Draft) -> list[int]:
    """The tokens an n-gram plan drafts: the first plan.k of the proposal (none for another drafter)."""
    return list(proposal.tokens[: plan.k]) if plan.drafter == "ngram" and plan.k > 0 else []


def observe_round(policy: SpeculationPolicy, plan: Plan, proposal: Draft, drafted: int, accepted: int,
                  draft_s: float, verify_s: float, kept: Sequence[int]) -> None:
    """The policy learns the round's outcome and how the n-gram proposal compared with the tokens kept."""
    if drafted:
        policy.observe(plan, drafted, accepted, draft_s, verify_s)
    else:
        policy.observe(plan, 0, 0, 0.0, verify_s)
    if proposal.tokens:
        policy.observe_proposal(proposal.match_len, proposal.tokens, kept)
