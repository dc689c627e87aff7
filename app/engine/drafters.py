"""Where draft tokens come from: a smaller model that shares the target's vocabulary, or the text itself.

A drafter proposes up to k tokens that would follow `history` (whose last token the target has not evaluated
yet). Proposals are only guesses: the target's verification decides what is kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from app.engine.llama_model import LoadedModel
from app.engine.sampling import Sampler, sample_from


@dataclass
class Draft:
    tokens: list[int] = field(default_factory=list)
    # The drafter's distribution at each drafted position, when it sampled from one (temperature > 0 with a
    # draft model). None means the proposal is deterministic (greedy, or an n-gram lookup).
    probs: Optional[list[np.ndarray]] = None
    source: str = "none"
    # For n-gram proposals: how many trailing tokens matched. Longer matches are more often right.
    match_len: int = 0


class NgramDrafter:
    """Prompt lookup: if the last n tokens appeared before, propose what followed them then.

    Nearly free (a dict lookup), and strong whenever the reply repeats its input: code edits, quoting, lists.
    """

    name = "ngram"

    def __init__(self, n_min: int = 2, n_max: int = 6):
        self.n_min = n_min
        self.n_max = n_max
        self._index: dict[tuple[int, ...], int] = {}
        self._indexed_end = 0
        self._history: list[int] = []

    def _sync(self, history: Sequence[int]) -> None:
        # History only grows within a request, but a new request may share just a prefix with the old one.
        shared = self._indexed_end
        if len(history) < shared or list(history[:shared]) != self._history[:shared]:
            self._index.clear()
            self._indexed_end = 0
        self._history = list(history)
        # Index every n-gram that has a continuation token, so the current suffix never matches itself.
        for end in range(max(self._indexed_end, self.n_min), len(history)):
            for n in range(self.n_min, min(self.n_max, end) + 1):
                self._index[tuple(history[end - n:end])] = end
        self._indexed_end = max(self._indexed_end, len(history))

    def propose(self, history: Sequence[int], k: int) -> Draft:
        if k <= 0 or len(history) <= self.n_min:
            return Draft(source=self.name)
        self._sync(history)
        for n in range(min(self.n_max, len(history) - 1), self.n_min - 1, -1):
            start = self._index.get(tuple(history[-n:]))
            if start is not None and start < len(history):
                return Draft(tokens=list(history[start:start + k]), source=self.name, match_len=n)
        return Draft(source=self.name)


class ModelDrafter:
    """A draft model run autoregressively, one token per forward pass, on its own KV cache."""

    name = "model"

    def __init__(self, model: LoadedModel):
        self.model = model

    def propose(
        self,
        history: Sequence[int],
        k: int,
        sampler: Sampler,
        rng: np.random.Generator,
        p_min: float = 0.0,
        cancel=None,
    ) -> Draft:
        draft = Draft(probs=None if sampler.greedy else [], source=self.name)
        if k <= 0:
            return draft
        model = self.model
        # Catch the draft's cache up with the history (after a rejection it holds tokens the target refused).
        kept = model.keep_common_prefix(history, leave=1)
        pending = list(history[kept:])
        if model.room < len(pending) + k:
            return draft  # no room left in the draft's context: let the target go on alone
        if not model.decode(pending, logit_rows=[len(pending) - 1], cancel=cancel):
            return draft
        row = len(pending) - 1
        for i in range(k):
            logits = model.logits(row)
            if sampler.greedy:
                token = int(np.argmax(logits))
                if p_min > 0.0:
                    shifted = np.exp(logits - logits[token])
                    if 1.0 / shifted.sum() < p_min:
                        break
            else:
                q = sampler.distribution(logits)
                if p_min > 0.0 and q.max() < p_min:
                    break
                token = sample_from(q, rng)
                draft.probs.append(q)
            draft.tokens.append(token)
            if i + 1 < k:
                model.decode([token], logit_rows=[0])
                row = 0
        return draft
