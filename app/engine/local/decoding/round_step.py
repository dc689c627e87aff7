"""One round of one reply, in the steps every decoder takes: planned by the reply's policy, drafted, verified against
the target's rows, learned from, recorded and written.

The single decoder (single.py) and the batch (app.engine.local.batch.scheduler) run every round through a RoundStep,
so its steps are written once; each decoder only decides when its forward passes run (the batch one for every
reply's round) and who drafts with the draft model (the batch for every reply at once).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.engine.events import COPYING_SOURCES, EngineEvent
from app.engine.local.decoding.reply import LogitRows, Reply
from app.engine.local.decoding.verify import verify
from app.engine.local.vision.projector import before_placeholder
from app.engine.speculation.drafters import Draft
from app.engine.speculation.policy import Plan
from app.engine.speculation.rounds import Proposals, copy_tokens, draft_ceiling, observe_round, plan_round

# A draft model that drafted last round reads at most this many tokens before drafting again: the last token
# it drafted, the target's own token and the one the batch ends with. A draft that first read more (the prompt, or
# text another drafter supplied) says nothing about what drafting a token costs: its time is not learned from.
USUAL_CATCH_UP = 3


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
