"""The target's verdict on a draft: how many drafted tokens it keeps and which token it adds itself, from the rows of
logits it decoded for [last token, *draft]."""

from __future__ import annotations

from typing import Optional

import numpy as np

from app.engine.local.decoding.reply import LogitRows
from app.engine.local.grammar import GrammarMask
from app.engine.local.sampling import Penalties, Sampler, accept_or_resample
from app.engine.speculation.drafters import Draft


def verify(
    target: LogitRows,
    draft: Draft,
    sampler: Sampler,
    rng: np.random.Generator,
    grammar: Optional[GrammarMask] = None,
    penalties: Optional[Penalties] = None,
) -> tuple[int, int]:
    """Decide how many drafted tokens the target keeps and which token it adds itself.

    Expects the target to have just decoded [last, *draft.tokens] with logits for every row (`target`'s rows 0..k). Under a `grammar`
    each row is masked by the grammar's state at its position (the state advances by each kept token; the
    caller's state is left as it was). With `penalties`, each row is penalised by the reply's tokens up to its
    position, the drafted ones before it included.
    Returns (accepted count, the target's own next token).
    """
    state = grammar.clone() if grammar is not None else None
    try:
        return _verify_rows(target, draft, sampler, rng, state, penalties)
    finally:
        if state is not None:
            state.close()


def _verify_rows(
    target: LogitRows,
    draft: Draft,
    sampler: Sampler,
    rng: np.random.Generator,
    state: Optional[GrammarMask],
    penalties: Optional[Penalties],
) -> tuple[int, int]:
    def logits(i: int) -> np.ndarray:
        return penalties.apply(target.logits(i), draft.tokens[:i]) if penalties is not None else target.logits(i)

    def row(i: int) -> np.ndarray:
        return state.masked(logits(i)) if state is not None else logits(i)

    def greedy_choice(i: int) -> int:
        # The row's best token, when the grammar allows it, is the masked row's best too (masking only lowers
        # others): the whole vocabulary is masked only when it does not (llama.cpp's sampler does the same).
        best = int(np.argmax(logits(i)))
        if state is None or state.allows(best):
            return best
        return int(np.argmax(state.masked(logits(i))))

    for i, token in enumerate(draft.tokens):
        if sampler.greedy:
            best = greedy_choice(i)
            if best != token:
                return i, best
        else:
            q = draft.probs[i] if draft.probs else None
            accepted, chosen = accept_or_resample(token, sampler.distribution(row(i)), q, rng)
            if not accepted:
                return i, chosen
        if state is not None:
            state.accept(token)
    if sampler.greedy:
        return len(draft.tokens), greedy_choice(len(draft.tokens))
    return len(draft.tokens), sampler.pick(row(len(draft.tokens)), rng)
