"""Many requests at once on the real Qwen pair: one engine decoding every request in one batch
(app.engine.local.batch), against the same requests one stream at a time.

    python -m tests.perf.concurrency [--tokens 64] [--n 1,2,4] [--f16 PATH] [--threads 2] [--modes plain,auto]

For each target (the Q4_K_M 1.5B, and with --f16 its F16 copy, made by /work/shared/tools/make-f16-target.py),
each mode (plain; n-gram lookup, a fixed 8; the 0.5B draft model, a fixed 4; Auto: the controller with the draft
model and n-gram lookup, drafts decided for the batch) and each N, N requests are added at once and stepped to
the end. Prints the aggregate tok/s (every request's tokens over the time until the last ended), each request's
time to its first token and its own tok/s, the rounds whose draft the batch cut, whether request 1's reply is the
one it got alone (N = 1), and the process's RSS with N sequences. Greedy, ignore_eos, --tokens per request.
CPU-heavy: run it alone. llama-server -np N is not run here (see docs/performance.md for its figures).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Optional

from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from app.engine.gguf.memory import kv_bytes
from app.engine.local.batch.scheduler import BatchRequest, BatchScheduler
from app.engine.local.batch.sequences import kv_budget_line
from app.engine.local.cost_cache import cached_costs
from app.engine.local.llama_model import LoadedModel
from app.engine.speculation.auto_controller import AutoController
from app.engine.speculation.costs import prior_costs
from app.engine.speculation.drafters import NgramDrafter
from app.engine.speculation.policy import FixedPolicy
from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET
from tests.perf.memory import rss_mib

QUESTIONS = [
    "Write a Python function that checks whether a string is a palindrome, with a docstring.",
    "Explain in a short paragraph what a hash map is and when to use one.",
    "Write a bash one-liner that counts the lines of every .py file under the current folder.",
    "Rename the function `area` to `rectangle_area` and change nothing else:\n\n```python\n"
    "def area(width, height):\n    \"\"\"The area of a rectangle.\"\"\"\n    return width * height\n\n\n"
    "def describe(width, height):\n    return f\"{width} x {height} = {area(width, height)}\"\n```",
]
MODES = ("plain", "ngram", "model", "auto")
CONTEXT_PER_SEQUENCE = 1024


def chat_prompt(question: str) -> str:
    return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


def policy_for(mode: str, costs, has_draft: bool):
    if mode == "plain":
        return FixedPolicy(0, "ngram")
    if mode == "ngram":
        return FixedPolicy(8, "ngram")
    if mode == "model":
        return FixedPolicy(4, "model")
    return AutoController(costs, with_model=has_draft)


def run(target: LoadedModel, draft: Optional[LoadedModel], mode: str, n: int, tokens: int, costs) -> dict:
    scheduler = BatchScheduler(target, draft)
    config = GenerationConfig(max_tokens=tokens, speculative=mode != "plain", ignore_eos=True)
    started = time.perf_counter()
    handles = []
    for i in range(n):
        prompt = target.tokenize(chat_prompt(QUESTIONS[i % len(QUESTIONS)]), add_special=True)
        handles.append(scheduler.add(BatchRequest(prompt, config, policy_for(mode, costs, draft is not None),
                                                  request_id=i + 1, ngram=NgramDrafter(is_control=target.is_control),
                                                  use_model=mode in ("model", "auto") and draft is not None)))
    first: dict[int, float] = {}
    ended: dict[int, float] = {}
    written: dict[int, list[int]] = {h: [] for h in handles}
    speeds: dict[int, float] = {}
    cut = rounds = 0
    while scheduler.busy:
        out = scheduler.step()
        now = time.perf_counter() - started
        for handle, events in out.items():
            for event in events:
                if isinstance(event, TokenEvent) and event.token_id >= 0:
                    first.setdefault(handle, now)
                    written[handle].append(event.token_id)
                elif isinstance(event, RoundEvent):
                    rounds += 1
                    cut += event.kind == "batch"
                elif isinstance(event, FinishedEvent):
                    ended[handle] = now
                    speeds[handle] = event.stats.tokens_per_second
    total = sum(len(w) for w in written.values())
    return {"aggregate": total / max(ended.values()), "ttft": [first[h] for h in handles],
            "speed": [speeds[h] for h in handles], "cut": cut, "rounds": rounds, "first_reply": written[handles[0]],
            "rss": rss_mib()}


def bench(target_path: Path, draft_path: Path, ns: list[int], tokens: int, threads: int,
          modes: tuple[str, ...] = MODES) -> None:
    n_max = max(ns)
    target = LoadedModel(target_path, n_ctx=CONTEXT_PER_SEQUENCE * n_max, n_threads=threads, n_seq_max=n_max)
    draft = LoadedModel(draft_path, n_ctx=CONTEXT_PER_SEQUENCE * n_max, n_threads=threads, n_seq_max=n_max)
    per_sequence = kv_bytes(target.kv_values_per_token, CONTEXT_PER_SEQUENCE) \
        + kv_bytes(draft.kv_values_per_token, CONTEXT_PER_SEQUENCE)
    costs = cached_costs(target, draft, threads, (0, 0), "CPU")
    measured = costs is not None
    if costs is None:
        costs = prior_costs(target_path.stat().st_size, draft_path.stat().st_size, on_gpu=False)
    print(f"\n## {target_path.name} + {draft_path.name}, {threads} threads, {tokens} tokens a request; costs "
          f"{'measured' if measured else 'estimated (corrected online)'}; "
          f"{kv_budget_line(n_max, per_sequence)} at {CONTEXT_PER_SEQUENCE} tokens each")
    print("| mode | N | aggregate tok/s | x plain N=1 | first token (s) per request | tok/s per request "
          "| rounds cut for the batch | request 1 as alone | RSS MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    plain_one = 0.0
    for mode in modes:
        alone: list[int] = []
        for n in ns:
            r = run(target, draft, mode, n, tokens, costs)
            if mode == "plain" and n == 1:
                plain_one = r["aggregate"]
            if n == 1:
                alone = r["first_reply"]
            same = "yes" if r["first_reply"] == alone else \
                f"no, from token {next(i for i, (a, b) in enumerate(zip(alone, r['first_reply'])) if a != b)}"
            print(f"| {mode} | {n} | {r['aggregate']:.1f} | {r['aggregate'] / plain_one:.2f} | "
                  f"{' '.join(f'{t:.2f}' for t in r['ttft'])} | {' '.join(f'{s:.1f}' for s in r['speed'])} | "
                  f"{r['cut']}/{r['rounds']} | {same} | {r['rss']:.0f} |", flush=True)
    target.close()
    draft.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--n", default="1,2,4", help="request counts, comma-separated")
    parser.add_argument("--f16", type=Path, help="the target's F16 copy, benchmarked after the Q4 one")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--only-f16", action="store_true", help="skip the Q4 target")
    parser.add_argument("--modes", default=",".join(MODES), help=f"some of {', '.join(MODES)}, plain first")
    args = parser.parse_args()
    ns = [int(x) for x in args.n.split(",")]
    modes = tuple(m for m in args.modes.split(",") if m in MODES)
    draft = REAL_MODELS_DIR / REAL_DRAFT
    if not args.only_f16:
        bench(REAL_MODELS_DIR / REAL_TARGET, draft, ns, args.tokens, args.threads, modes)
    if args.f16 is not None:
        bench(args.f16, draft, ns, args.tokens, args.threads, modes)


if __name__ == "__main__":
    main()
