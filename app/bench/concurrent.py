"""Many requests at once, measured on the engine itself: N requests added to one BatchScheduler together and stepped
to the end, for each N and each speculation mode.

    python -m app.bench.concurrent --target T.gguf --draft D.gguf [--n 1,2,4] [--tokens 64] [--threads 2]
                                   [--gpu-layers 0] [--modes plain,ngram,model,auto] [--json]

Per mode and N: the aggregate tok/s (every request's tokens over the time until the last ended) and its ratio to
plain at N = 1 of the same run; the full-batch tok/s (the tokens written while all N were writing, over that
time: what a server kept full by a queue gives, where a request that ends sooner makes room for the next); each request's time to its first token and its own tok/s, the rounds whose draft
the batch cut (kind "batch"), whether request 1's reply is the one it got at N = 1, and the process's RSS.
Greedy, ignore_eos. Used by tests/perf/concurrency.py (the real pair, F16 and Q4_K_M) and by the GPU check
(app.bench.gpu_check). CPU-heavy: run it alone.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Optional

from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from app.engine.gguf.memory import kv_bytes
from app.engine.local.batch.scheduler import BatchScheduler
from app.engine.local.batch.sequences import kv_budget_line
from app.engine.local.cost_cache import cached_costs
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.llama_model import LoadedModel
from app.engine.speculation.auto_controller import AutoController
from app.engine.speculation.costs import prior_costs
from app.engine.speculation.drafters import NgramDrafter
from app.engine.speculation.policy import FixedPolicy
from app.platform.process_memory import rss_mib

QUESTIONS = [
    "Write a Python function that checks whether a string is a palindrome, with a docstring.",
    "Explain in a short paragraph what a hash map is and when to use one.",
    "Write a bash one-liner that counts the lines of every .py file under the current folder.",
    "Rename the function `area` to `rectangle_area` and change nothing else:\n\n```python\n"
    'def area(width, height):\n    """The area of a rectangle."""\n    return width * height\n\n\n'
    'def describe(width, height):\n    return f"{width} x {height} = {area(width, height)}"\n```',
]
MODES = ("plain", "ngram", "model", "auto")
CONTEXT_PER_SEQUENCE = 1024


def chat_prompt(question: str) -> str:
    return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


def policy_for(mode: str, costs, has_draft: bool):
    """Fixed settings: plain, n-gram 8, the draft model 4; Auto: the controller with the draft model if any."""
    if mode == "plain":
        return FixedPolicy(0, "ngram")
    if mode == "ngram":
        return FixedPolicy(8, "ngram")
    if mode == "model":
        return FixedPolicy(4, "model")
    return AutoController(costs, with_model=has_draft)


def full_batch_rate(times: list[float], firsts: list[float], ends: list[float]) -> float:
    """Tokens per second while every request was writing: from the last first token to the first end (0.0 when
    that window is empty, as with one request too short to overlap)."""
    start, end = max(firsts), min(ends)
    inside = sum(1 for t in times if start < t <= end)
    return inside / (end - start) if end > start else 0.0


def run(target: LoadedModel, draft: Optional[LoadedModel], mode: str, n: int, tokens: int, costs) -> dict:
    """N requests at once in one mode: the figures the table prints, and request 1's reply."""
    scheduler = BatchScheduler(target, draft)
    config = GenerationConfig(max_tokens=tokens, speculative=mode != "plain", ignore_eos=True)
    started = time.perf_counter()
    handles = []
    for i in range(n):
        prompt = target.tokenize(chat_prompt(QUESTIONS[i % len(QUESTIONS)]), add_special=True)
        handles.append(
            scheduler.add(
                DecodeRequest(
                    prompt,
                    config,
                    policy_for(mode, costs, draft is not None),
                    request_id=i + 1,
                    ngram=NgramDrafter(is_control=target.is_control, escape=target.json_escaped),
                    use_model=mode in ("model", "auto") and draft is not None,
                )
            )
        )
    first: dict[int, float] = {}
    times: list[float] = []  # when each token of every request was written
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
                    times.append(now)
                elif isinstance(event, RoundEvent):
                    rounds += 1
                    cut += event.kind == "batch"
                elif isinstance(event, FinishedEvent):
                    ended[handle] = now
                    speeds[handle] = event.stats.tokens_per_second
    total = sum(len(w) for w in written.values())
    return {
        "aggregate": total / max(ended.values()),
        "full_batch": full_batch_rate(times, list(first.values()), list(ended.values())),
        "ttft": [first[h] for h in handles],
        "speed": [speeds[h] for h in handles],
        "cut": cut,
        "rounds": rounds,
        "first_reply": written[handles[0]],
        "rss": rss_mib(),
    }


def bench(
    target_path: Path,
    draft_path: Optional[Path],
    ns: list[int],
    tokens: int,
    threads: int,
    modes: tuple[str, ...] = MODES,
    gpu_layers: int = 0,
    print_table: bool = True,
) -> list[dict]:
    """Every mode at every N, plain first; each row as a dict (printed as a Markdown table when `print_table`)."""
    n_max = max(ns)
    target = LoadedModel(
        target_path, n_ctx=CONTEXT_PER_SEQUENCE * n_max, n_threads=threads, n_seq_max=n_max, n_gpu_layers=gpu_layers
    )
    draft = (
        LoadedModel(
            draft_path, n_ctx=CONTEXT_PER_SEQUENCE * n_max, n_threads=threads, n_seq_max=n_max, n_gpu_layers=gpu_layers
        )
        if draft_path is not None
        else None
    )
    rows: list[dict] = []
    try:
        per_sequence = kv_bytes(target.kv_values_per_token, CONTEXT_PER_SEQUENCE) + (
            kv_bytes(draft.kv_values_per_token, CONTEXT_PER_SEQUENCE) if draft is not None else 0
        )
        costs = cached_costs(target, draft, threads, (gpu_layers, gpu_layers), "CPU" if not gpu_layers else "GPU")
        measured = costs is not None
        if costs is None:
            costs = prior_costs(
                target_path.stat().st_size, draft_path.stat().st_size if draft_path else 0, on_gpu=bool(gpu_layers)
            )
        if print_table:
            print(
                f"\n## {target_path.name} + {draft_path.name if draft_path else 'no draft'}, {threads} threads, "
                f"{tokens} tokens a request; costs {'measured' if measured else 'estimated (corrected online)'}; "
                f"{kv_budget_line(n_max, per_sequence, CONTEXT_PER_SEQUENCE)}"
            )
            print(
                "| mode | N | aggregate tok/s | x plain N=1 | full-batch tok/s | first token (s) per request "
                "| tok/s per request | rounds cut for the batch | request 1 as alone | RSS MiB |"
            )
            print("|---|---|---|---|---|---|---|---|---|---|")
        plain_one = 0.0
        for mode in modes:
            alone: list[int] = []
            for n in ns:
                r = run(target, draft, mode, n, tokens, costs)
                plain_one = plain_one or r["aggregate"]
                if n == ns[0]:
                    alone = r["first_reply"]
                differs = next((i for i, (a, b) in enumerate(zip(alone, r["first_reply"])) if a != b), None)
                row = {
                    "mode": mode,
                    "n": n,
                    "aggregate": r["aggregate"],
                    "vs_plain_1": r["aggregate"] / plain_one,
                    "full_batch": r["full_batch"],
                    "ttft": r["ttft"],
                    "speed": r["speed"],
                    "cut": r["cut"],
                    "rounds": r["rounds"],
                    "as_alone_until": differs,
                    "rss_mib": r["rss"],
                }
                rows.append(row)
                if print_table:
                    same = "yes" if differs is None else f"no, from token {differs}"
                    print(
                        f"| {mode} | {n} | {r['aggregate']:.1f} | {row['vs_plain_1']:.2f} | {r['full_batch']:.1f} | "
                        f"{' '.join(f'{t:.2f}' for t in r['ttft'])} | {' '.join(f'{s:.1f}' for s in r['speed'])} | "
                        f"{r['cut']}/{r['rounds']} | {same} | {r['rss']:.0f} |",
                        flush=True,
                    )
    finally:
        target.close()
        if draft is not None:
            draft.close()
    return rows


def main(argv: Optional[list[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", type=Path, required=True)
    parser.add_argument("--draft", type=Path)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--n", default="1,2,4", help="request counts, comma-separated")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--gpu-layers", type=int, default=0)
    parser.add_argument("--modes", default=",".join(MODES), help=f"some of {', '.join(MODES)}, plain first")
    parser.add_argument("--json", action="store_true", help="the rows as JSON on stdout instead of the table")
    args = parser.parse_args(argv)
    modes = tuple(m for m in args.modes.split(",") if m in MODES)
    rows = bench(
        args.target,
        args.draft,
        [int(x) for x in args.n.split(",")],
        args.tokens,
        args.threads,
        modes,
        args.gpu_layers,
        print_table=not args.json,
    )
    if args.json:
        print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
