"""The draft model's drafter: a smaller model that shares the target's vocabulary, run one token per forward pass.

A proposal is a Draft (app.engine.speculation.drafters); only the engine process's main thread may call it.
"""

from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from app.engine.events import DraftSource
from app.engine.local.llama_model import LoadedModel
from app.engine.local.vision.projector import text_only
from app.engine.local.sampling import Sampler, sample_from
from app.engine.speculation.drafters import Draft


# AdaEDL (Agrawal et al., 2024): 1 - sqrt(ENTROPY_WEIGHT * H) is a lower bound on the chance the target accepts a
# draft token drawn from a distribution of entropy H (nats); a draft stops where that bound falls below a threshold
# the controller adapts round by round.
ENTROPY_WEIGHT = 0.5


def acceptance_bound(probs: np.ndarray) -> float:
    """AdaEDL's estimate of how likely the target keeps a token drafted from `probs` (from its entropy)."""
    p = probs[probs > 0]
    entropy = float(-(p * np.log(p)).sum())
    return 1.0 - float(np.sqrt(ENTROPY_WEIGHT * entropy))


def _softmax(logits: np.ndarray) -> np.ndarray:
    shifted = np.exp(logits - logits.max())
    return shifted / shifted.sum()


class ModelDrafter:
    """A draft model run autoregressively, one token per forward pass, on its own KV cache."""

    name: DraftSource = "model"

    def __init__(self, model: LoadedModel):
        self.model = model

    def behind(self, written: Sequence[int]) -> int:
        """How many tokens of `written` the draft model would read before its next draft (at most len(written))."""
        written = text_only(written)
        return len(written) - self.model.common_prefix(written)

    def propose(
        self,
        written: Sequence[int],
        k: int,
        sampler: Sampler,
        rng: np.random.Generator,
        p_min: float = 0.0,
        cancel=None,
        stop_below: float = 0.0,
    ) -> Draft:
        """Up to k tokens. The draft stops early where its top probability falls below `p_min`, or where its own
        confidence (acceptance_bound) falls below `stop_below`; the first token is always drafted."""
        sampled: list[np.ndarray] = []  # the draft's distributions, when it samples from them
        draft = Draft(probs=None if sampler.greedy else sampled, source=self.name)
        if k <= 0:
            return draft
        model = self.model
        written = text_only(written)  # the draft cannot see: it reads the text around the pictures
        # Catch the draft's cache up with the written tokens (after a rejection it holds tokens the target refused).
        kept = model.keep_common_prefix(written, leave=1)
        pending = list(written[kept:])
        draft.caught_up = len(pending)
        if model.room < len(pending) + k:
            return draft  # no room left in the draft's context: let the target go on alone
        if not model.decode(pending, logit_rows=[len(pending) - 1], cancel=cancel):
            return draft
        row = len(pending) - 1
        for i in range(k):
            token = next_draft_token(model.logits(row), i, sampler, rng, p_min, stop_below, sampled)
            if token is None:
                break
            draft.tokens.append(token)
            if i + 1 < k:
                model.decode([token], logit_rows=[0])
                row = 0
        return draft


def next_draft_token(
    logits: np.ndarray,
    i: int,
    sampler: Sampler,
    rng: np.random.Generator,
    p_min: float,
    stop_below: float,
    sampled: list[np.ndarray],
) -> Optional[int]:
    """Draft token `i` from the draft model's `logits`, or None where the draft stops: its top probability
    below `p_min`, or its own confidence (acceptance_bound) below `stop_below`; the first token is always drafted.
    A sampled draft's distribution is appended to `sampled`."""
    if sampler.greedy:
        token = int(np.argmax(logits))
        if p_min > 0.0 or (stop_below > 0.0 and i > 0):
            probs = _softmax(logits)
            if probs[token] < p_min or (i > 0 and acceptance_bound(probs) < stop_below):
                return None
        return token
    q = sampler.distribution(logits)
    if p_min > 0.0 and q.max() < p_min:
        return None
    if stop_below > 0.0 and i > 0 and acceptance_bound(q) < stop_below:
        return None
    sampled.append(q)
    return sample_from(q, rng)
