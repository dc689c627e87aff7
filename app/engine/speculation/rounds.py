"""One speculative round's bookkeeping: propose, plan, and let the policy learn from what was kept.

The local decoders (app.engine.local.decoding.round_step) and the controller's replay (tests/perf/replay.py) both run their rounds through
these functions, so a change here is seen by the replay's figures as well as by real generation.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from app.engine.speculation.drafters import Draft, NgramDrafter
from app.engine.speculation.history import HistoryDrafter
from app.engine.speculation.policy import Plan, SpeculationPolicy, agreement

SPECULATION_OFF = "speculation is off for this chat"


# A reply's first round drafts at most this many tokens: its token is the one a person or a client waits for, and a
# draft there only guesses how the reply opens from how earlier turns opened (n-gram lookup matches the chat
# template's assistant header). A verify batch of 2 costs little more than one token; a rejected longer draft made
# the first token wait 0.58 s for its batch, where one token takes 0.09 s, on a CPU (docs/performance-log.md,
# 2026-12-07).
FIRST_ROUND_DRAFT = 1


def draft_ceiling(k_max: int, emitted: int) -> int:
    """The longest draft a round may ask for, `k_max` being what the context and the reply's length allow, when the
    reply has written `emitted` tokens (FIRST_ROUND_DRAFT at most before its first)."""
    return k_max if emitted else min(k_max, FIRST_ROUND_DRAFT)


@dataclass
class Proposals:
    """What the copying drafters propose this round (each empty when it has nothing): n-gram lookup of this
    request's text, and the history drafter's of earlier ones."""

    ngram: Draft = field(default_factory=Draft)
    history: Draft = field(default_factory=Draft)

    def of(self, drafter: str) -> Draft:
        return self.history if drafter == "history" else self.ngram


def plan_round(
    policy: SpeculationPolicy,
    written: Sequence[int],
    k_max: int,
    *,
    speculative: bool,
    ngram: Optional[NgramDrafter],
    has_model: bool,
    past: Optional[HistoryDrafter] = None,
    model_behind: int = 0,
) -> tuple[Plan, Proposals]:
    """(the plan, the copy proposals it was made from), for the request's tokens so far (`written`).
    `model_behind`: the tokens the draft model would read before drafting."""
    if not speculative:
        return Plan("none", 0, SPECULATION_OFF), Proposals()
    proposals = Proposals(
        ngram.propose(written, k_max) if ngram is not None else Draft(),
        past.propose(written, k_max) if past is not None else Draft(),
    )
    ngram_draft, history_draft = proposals.ngram, proposals.history
    if ngram_draft.tokens and history_draft.tokens:
        # Where the two agree, one proposal covers both: the longer one, planned as the drafter it came from.
        shared = min(len(ngram_draft.tokens), len(history_draft.tokens))
        if agreement(ngram_draft.tokens, history_draft.tokens) == shared:
            if len(history_draft.tokens) > len(ngram_draft.tokens):
                ngram_draft = Draft()
            else:
                history_draft = Draft()
    plan = policy.plan(
        k_max,
        ngram_draft.tokens,
        has_model,
        ngram_draft.match_len,
        history_draft=history_draft if history_draft.tokens else None,
        model_behind=model_behind,
    )
    return plan, proposals


def copy_tokens(plan: Plan, proposals: Proposals) -> list[int]:
    """The tokens a copying plan drafts: the first plan.k of its drafter's proposal (none for the draft model)."""
    if plan.drafter not in ("ngram", "history") or plan.k <= 0:
        return []
    return list(proposals.of(plan.drafter).tokens[: plan.k])


def observe_round(
    policy: SpeculationPolicy,
    plan: Plan,
    proposals: Proposals,
    drafted: int,
    accepted: int,
    draft_s: float,
    verify_s: float,
    kept: Sequence[int],
    rows: int = 0,
) -> None:
    """The policy learns the round's outcome and how each copy proposal compared with the tokens kept.
    `rows`: the forward pass's rows when it held other requests' too (a batch), so `verify_s` is their cost."""
    if rows:
        policy.observe(plan, drafted, accepted, draft_s if drafted else 0.0, verify_s, rows=rows)
    elif drafted:
        policy.observe(plan, drafted, accepted, draft_s, verify_s)
    else:
        policy.observe(plan, 0, 0, 0.0, verify_s)
    for source in ("ngram", "history"):
        proposal = proposals.of(source)
        if proposal.tokens:
            policy.observe_proposal(proposal.match_len, proposal.tokens, kept, source=source)
