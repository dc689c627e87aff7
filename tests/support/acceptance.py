"""Greedy acceptance of a draft against a target, measured with llama_cpp's high-level API (tests only)."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import numpy as np


def greedy_acceptance(
    target: Path, draft: Path, prompts: Sequence[str] = ("Hello", "def add(a, b):", "The cat"), n_tokens: int = 64
) -> float:
    """Fraction of the target's greedy tokens the draft would also have picked greedily, over a few prompts.

    This is the acceptance rate of greedy speculative decoding with any draft length. Needs llama_cpp.
    """
    from llama_cpp import Llama

    # One thread: two spin against any other process on a 2-core machine, and no result depends on the count.
    kwargs = dict(n_ctx=512, n_threads=1, n_threads_batch=1, logits_all=True, verbose=False, seed=0)
    target_model = Llama(str(target), **kwargs)
    draft_model = Llama(str(draft), **kwargs)
    agreed = total = 0
    try:
        for prompt in prompts:
            prompt_tokens = target_model.tokenize(prompt.encode(), add_bos=True, special=False)
            target_model.reset()
            continuation: list[int] = []
            for token in target_model.generate(prompt_tokens, temp=0.0, top_k=1, reset=True):
                continuation.append(token)
                if len(continuation) >= n_tokens:
                    break
            draft_model.reset()
            draft_model.eval(prompt_tokens + continuation[:-1])
            # scores[i] is the draft's prediction after token i; position len(prompt)-1 predicts continuation[0].
            start = len(prompt_tokens) - 1
            draft_picks = np.argmax(draft_model.scores[start : start + len(continuation)], axis=1)
            agreed += int(np.sum(draft_picks == np.array(continuation)))
            total += len(continuation)
    finally:
        target_model.close()
        draft_model.close()
    return agreed / total if total else 0.0
