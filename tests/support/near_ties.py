"""Where speculative greedy decoding may differ from plain: at a near-tie of the target's top two logits. A verify
batch of k+1 rows sums in another order than one row, so a near-tie can flip; anywhere else the texts must agree.

The thread count is no cause: one thread and two read the same tokens to the same logits, one at a time. A verify
batch does move them, and how it is laid out (how far each round drafted, which the controller decides by the
machine's timings, so a busy machine lays out other batches) decides which near-ties flip."""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np

from app.engine.local.llama_model import LoadedModel

# The largest change of the top-two gap that reading the real target's reply in verify batches of 5 (at every
# alignment, on 1 and 2 threads) made against one token at a time, rounded up: measured by tests/perf/near_tie_shift.py,
# dated in docs/performance-log.md. A divergence where the gap is wider than this was a drafted token changing the
# reply, which must never happen.
NEAR_TIE = 0.35


def first_divergence(plain: Sequence[int], drafted: Sequence[int]) -> Optional[int]:
    """The first position where the two token lists differ (a shorter one differs where it ends), None if equal."""
    diverged = next((i for i, (a, b) in enumerate(zip(plain, drafted)) if a != b), None)
    if diverged is None and len(plain) != len(drafted):
        diverged = min(len(plain), len(drafted))
    return diverged


def top_two_gap(
    target: Path, prompt: Sequence[int], plain: Sequence[int], at: int, *, n_ctx: int, n_threads: int
) -> float:
    """The target's top-2 logit gap at reply position `at`, replayed one token at a time as plain decoding reads."""
    model = LoadedModel(target, n_ctx=n_ctx, n_threads=n_threads)
    try:
        model.decode(list(prompt[:-1]))
        for token in [prompt[-1], *plain[:at]]:
            model.decode([token], logit_rows=[0])
        top2 = np.sort(model.logits(0))[-2:]
        return float(top2[1] - top2[0])
    finally:
        model.close()
