"""How far another thread count or a verify batch moves the real target's top-two logit gap, position by position.

Speculative greedy decoding may write another token than plain decoding only where the target's top two logits are
closer than what reading the same tokens another way moves them by (tests/support/near_ties.py). This measures
that shift on the reasoning test's reply (tests/engine/reasoning/test_reasoning_real.py): the plain reply is read
one token at a time on 2 threads (the reference, as plain decoding and `top_two_gap` read it), then on 1 thread,
and in batches of 5 (a verify batch of 4 drafts) at each of the 5 alignments on 2 threads, and from the first on 1. For every
position it takes the gap between the reference's top two tokens, and reports the largest change of that gap per
way of reading, the gap at each position where a drafted reply left the plain one, and whether any way of reading
flips the top token there.

    python -m tests.perf.near_tie_shift                # the Qwen2.5-Coder 1.5B target of the real-model tests
    python -m tests.perf.near_tie_shift --runs 3       # drafted replies asked 3 times each (n-gram and auto)
    python -m tests.perf.near_tie_shift --runs 0 --at 28   # no drafted replies: the shifts, and position 28's
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Sequence

import numpy as np

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, TokenEvent
from app.engine.local.engine import SpecEngine
from app.engine.local.llama_model import LoadedModel
from tests.engine.reasoning.test_reasoning_real import _messages
from tests.support.near_ties import first_divergence

MODELS = Path(os.environ.get("SPECCHAT_TEST_MODELS") or Path.home() / ".cache" / "specchat-test-models")
QUESTION = "Is 91 a prime number?"
VERIFY_ROWS = 5


def _reply(engine: SpecEngine, **config) -> list[int]:
    events = list(engine.chat(_messages(QUESTION), GenerationConfig(max_tokens=160, history=False, **config)))
    assert isinstance(events[-1], FinishedEvent)
    return [e.token_id for e in events if isinstance(e, TokenEvent)]


def _logits(target: Path, prompt: Sequence[int], reply: Sequence[int], threads: int, rows: int, offset: int):
    """Each reply position's logits, the reply read `rows` tokens a pass (the first pass `offset` tokens)."""
    model = LoadedModel(target, n_ctx=2048, n_threads=threads)
    try:
        model.decode(list(prompt[:-1]))
        tokens = [prompt[-1], *reply[:-1]]
        out: list[np.ndarray] = []
        start = 0
        while start < len(tokens):
            size = offset if start == 0 and offset else rows
            chunk = tokens[start : start + size]
            model.decode(chunk, logit_rows=range(len(chunk)))
            out.extend(model.logits(i).copy() for i in range(len(chunk)))
            start += len(chunk)
        return out
    finally:
        model.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2, help="drafted replies asked per drafter")
    parser.add_argument(
        "--at", type=int, action="append", default=[], help="a position to report (besides those found)"
    )
    args = parser.parse_args()
    target, draft = (
        MODELS / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        MODELS / "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    )
    engine = SpecEngine(LoadSettings(n_ctx=2048, n_threads=2))
    engine.load_target(target)
    engine.load_draft(draft)
    plain = _reply(engine, speculative=False)
    prompt = engine.models.require_target().tokenize(engine.format_chat(_messages(QUESTION)), add_special=True)
    diverged: set[int] = set(args.at)
    for drafter in ("ngram", "auto"):
        for run in range(args.runs):
            at = first_divergence(plain, _reply(engine, drafter=drafter))
            print(f"{drafter} run {run + 1}: " + ("same as plain" if at is None else f"left plain at token {at}"))
            if at is not None and at < len(plain):
                diverged.add(at)
    engine.close()

    reference = _logits(target, prompt, plain, 2, 1, 0)
    pairs = []
    for row in reference:
        top = np.argsort(row)[-2:]
        pairs.append((int(top[1]), int(top[0])))
    gaps = np.array([row[a] - row[b] for row, (a, b) in zip(reference, pairs)])
    print(f"{len(plain)} tokens; smallest reference gaps: {np.round(np.sort(gaps)[:5], 3).tolist()}")
    ways = [("1 thread, single tokens", 1, 1, 0)]
    ways += [(f"2 threads, batches of {VERIFY_ROWS} from {o}", 2, VERIFY_ROWS, o) for o in range(VERIFY_ROWS)]
    ways += [(f"1 thread, batches of {VERIFY_ROWS} from 0", 1, VERIFY_ROWS, 0)]
    for name, threads, rows, offset in ways:
        other = _logits(target, prompt, plain, threads, rows, offset)
        moved = np.array([abs((row[a] - row[b]) - gap) for row, (a, b), gap in zip(other, pairs, gaps)])
        flips = [i for i, (row, (a, _b)) in enumerate(zip(other, pairs)) if int(np.argmax(row)) != a]
        at = ", ".join(f"token {i}: gap {gaps[i]:.3f} moved {moved[i]:.3f}" for i in sorted(diverged))
        print(f"{name}: largest shift {moved.max():.3f} (token {int(moved.argmax())}), flips at {flips}; {at}")


if __name__ == "__main__":
    main()
