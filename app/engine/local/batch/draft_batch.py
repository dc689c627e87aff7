"""The draft model drafting for every sequence of a batch at once: one forward pass per draft position, with a
row for each sequence still drafting (app.engine.local.decoding.model_drafter drafts for one).

Each sequence's draft stops where the single drafter's would (model_drafter.next_draft_token), so a request's
drafts are the same alone or in a batch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from app.engine.local.batch.sequences import Rows, Sequences
from app.engine.local.decoding.model_drafter import next_draft_token
from app.engine.local.sampling import Sampler
from app.engine.speculation.drafters import Draft


@dataclass
class DraftAsk:
    """One sequence's draft of up to `k` tokens after `written` (its draft-model sequence is `seq`)."""

    seq: int
    written: Sequence[int]
    k: int
    sampler: Sampler
    rng: np.random.Generator
    p_min: float = 0.0
    stop_below: float = 0.0


def draft_all(sequences: Sequences, asks: Sequence[DraftAsk]) -> list[Draft]:
    """Each ask's draft, in order. Each sequence first catches up with its written tokens (after a rejection it holds
    tokens the target refused); a sequence without room in the context drafts nothing."""
    samples: list[list[np.ndarray]] = [[] for _ in asks]
    drafts = [Draft(probs=None if ask.sampler.greedy else samples[i], source="model") for i, ask in enumerate(asks)]
    pending: list[list[int]] = []
    for ask, draft in zip(asks, drafts):
        kept = sequences.keep_prefix(ask.seq, ask.written, leave=1)
        pending.append(list(ask.written[kept:]))
        draft.caught_up = len(pending[-1])
    drafting = [i for i, ask in enumerate(asks) if ask.k > 0 and pending[i]]
    need = sum(len(pending[i]) + asks[i].k for i in drafting)
    if sequences.room < need:
        drafting = []  # no room left in the draft's context: the target goes on alone this step
    sequences.read([(asks[i].seq, pending[i][:-1]) for i in drafting])
    windows = sequences.decode([Rows(asks[i].seq, pending[i][-1:], 0) for i in drafting])
    position = 0
    while drafting:
        going: list[int] = []
        for i, window in zip(drafting, windows):
            ask = asks[i]
            token = next_draft_token(
                window.logits(0), position, ask.sampler, ask.rng, ask.p_min, ask.stop_below, samples[i]
            )
            if token is None:
                continue
            drafts[i].tokens.append(token)
            if position + 1 < ask.k:
                going.append(i)
        position += 1
        drafting = going
        windows = sequences.decode([Rows(asks[i].seq, drafts[i].tokens[-1:], 0) for i in drafting]) if drafting else []
    return drafts
