"""One round of one reply, in the steps every decoder takes: planned by the reply's policy, drafted, verified against
the target's rows, learned from, recorded and written.

The single decoder (single.py) and the batch (app.engine.local.batch.scheduler) run every round through a RoundStep,
so its steps are written once; each decoder only decides when its forward passes run (the batch one for every
reply's round) and who drafts with the draft model (the batch for every reply at once).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from app.engine.config import MAX_OUTPUT_ROWS
from app.engine.events import COPYING_SOURCES, EngineEvent
from app.engine.local.decoding.reply import LogitRows, Reply
from app.engine.local.decoding.verify import verify
from app.engine.local.vision.projector import before_placeholder
from app.engine.speculation.drafters import Draft
from app.engine.speculation.policy import Plan
from app.engine.speculation.rounds import (
    FIRST_ROUND_DRAFT,
    Proposals,
    copy_tokens,
    draft_ceiling,
    observe_round,
    plan_round,
)

# A draft model that drafted last round reads at most this many tokens before drafting again: the last token
# it drafted, the target's own token and the one the batch ends with. A draft that first read more (the prompt, or
# text another drafter supplied) says nothing about what drafting a token costs: its time is not learned from.
USUAL_CATCH_UP = 3


def first_round_rest(n_batch: int) -> int:
    """The most prompt tokens, its last one included, a reply's first round reads in its own forward pass (of
    `n_batch` rows at most): read in a pass before it, they would cost one more pass before the first token, the
    one a person or a client waits for. The round keeps room for the longest draft."""
    return max(1, n_batch - MAX_OUTPUT_ROWS)


def verify_rows(written: Sequence[int], pending: int, draft: Sequence[int]) -> list[int]:
    """A round's rows in its verify pass: the `pending` written tokens the cache lacks, then the draft; every row
    from the last written one on wants logits. A first round that reads the prompt's rest (pending > 1) is padded
    to FIRST_ROUND_DRAFT drafted rows with the last token (its row is rolled back with the refused): llama.cpp's
    kernels compute a batch's rows by its row count, so the prompt's cells come out the same, to the bit, whether
    or not anything was drafted, and a greedy reply stays the same with speculation on or off."""
    padding = FIRST_ROUND_DRAFT - len(draft) if pending > 1 else 0
    return [*written[len(written) - pending :], *draft, *[written[-1]] * padding]


@dataclass
class RoundStep:
    """A reply's round: its plan and the copy drafters' proposals, its draft, then the target's verdict (`accepted`
    drafted tokens kept, then its `own`). `index` is the round's number in the reply."""

    reply: Reply
    plan: Plan
    proposals: Proposals
    index: int
    draft: Draft = field(default_factory=lambda: Draft(source="none"))
    accepted: int = 0
    own: int = -1

    @classmethod
    def planned(cls, reply: Reply, room: int, *, has_model: bool, behind: int) -> RoundStep:
        """The round as the reply's own policy plans it, with `room` tokens of context left. `has_model`: whether the
        draft model may draft; `behind`: the tokens it would read before drafting."""
        request = reply.request
        request.policy.note_threads(reply.target.n_threads)
        plan, proposals = plan_round(
            request.policy,
            reply.written,
            draft_ceiling(reply.k_max(room), reply.emitted),
            speculative=request.config.speculative,
            ngram=request.ngram,
            has_model=has_model,
            past=request.past,
            model_behind=behind,
        )
        return cls(reply, plan, proposals, reply.tally.rounds)

    @property
    def model_drafts(self) -> bool:
        """Whether the draft model drafts this round (its caller asks it for `plan.k` tokens)."""
        return self.plan.k > 0 and self.plan.drafter == "model"

    def copy(self) -> None:
        """The draft of a copying drafter (n-gram, history), taken from its proposal; none for other drafters."""
        if self.plan.k > 0 and self.plan.drafter in COPYING_SOURCES:
            # Copied text stops before a picture's positions, which only a picture's embeddings may fill.
            tokens = before_placeholder(copy_tokens(self.plan, self.proposals))
            self.draft = Draft(tokens=tokens, source=self.plan.drafter)

    def judge(self, rows: LogitRows) -> None:
        """The target's verdict on the draft, from its rows for [last, *draft] (`rows`)."""
        reply = self.reply
        self.accepted, self.own = verify(rows, self.draft, reply.sampler, reply.rng, reply.grammar, reply.penalties)

    def learn(self, draft_s: float, verify_s: float, batch_rows: int = 0) -> None:
        """The policy learns the judged round: drafting took `draft_s` (0.0: not a cost to learn from) and verifying
        `verify_s`, over `batch_rows` rows when the pass held other replies' too."""
        draft = self.draft
        kept = [*draft.tokens[: self.accepted], self.own]
        observe_round(
            self.reply.request.policy,
            self.plan,
            self.proposals,
            len(draft.tokens),
            self.accepted,
            draft_s,
            verify_s,
            kept,
            rows=batch_rows,
        )

    def recorded(self, time_s: float, threads: int) -> list[EngineEvent]:
        """The round's RoundEvent (the reply's tally counts it)."""
        return self.reply.round_event(self.plan, self.draft, self.accepted, self.own, time_s, threads)

    def written(self, rows: LogitRows) -> list[EngineEvent]:
        """The kept tokens written (`rows`: where their log-probabilities are read), until the reply stops."""
        return self.reply.keep(self.draft, self.accepted, self.own, self.index, rows)
