"""Replay bursts of recorded replies written side by side: Auto's draft lengths decided for each step, against
plain batching of the same requests, with no model and no timing noise.

    python -m tests.perf.batch_replay              # N = 2 and 4, every recording, three cost shapes
    python -m tests.perf.batch_replay --tokens 64  # each reply's first 64 tokens (the concurrency benchmarks')

The single-request replay (tests/perf/replay.py) judges the controller alone; this one judges the step
(app.engine.speculation.batch_plan). A burst is N recorded replies started together, as N requests sent at once:
the prompts of one recording taken N at a time from each prompt in turn, so every prompt leads one burst. Each
request has its own AutoController and n-gram drafter, planned by the scheduler's own plan_round and fit_plans;
a step costs the verify batch of all its rows. Aggregate: every token of the burst over the time until its last
request ended, as the servers' benchmark counts it (tests/perf/concurrency_servers.py).

Costs, three shapes: the recording's own table (the 1.5B Q4_K_M on the 2-core CPU: a batch of n costs nearly n
tokens), and the estimates Auto starts from for a memory-bound target (the F16 copy on the same CPU) and for a GPU
(app.engine.speculation.costs). Printed per shape and N: plain batching's aggregate over one request's plain
speed, and Auto's aggregate over plain batching's with the step's rate alone and with "nobody slower"
(batch_plan's rule), as the geometric mean over the bursts and the worst burst.

What it cannot show: the draft model (the recordings hold no draft model's proposals), and prompt reading (every
burst starts with its prompts read).
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable

from app.bench.suite import geometric_mean
from app.engine.config import MAX_OUTPUT_ROWS
from app.engine.speculation.auto_controller import AutoController
from app.engine.speculation.batch_plan import fit_plans
from app.engine.speculation.costs import CostTable, prior_costs
from app.engine.speculation.drafters import NgramDrafter
from app.engine.speculation.policy import agreement
from app.engine.speculation.rounds import copy_tokens, draft_ceiling, observe_round, plan_round
from tests.perf.replay import MAX_TOKENS, RECORDINGS, Recording

Cost = Callable[[int], float]


@dataclass
class _Request:
    prompt: list[int]
    reply: list[int]
    drafter: NgramDrafter
    policy: AutoController
    written: int = 0

    @property
    def done(self) -> bool:
        return self.written >= len(self.reply)


def shapes(rec: Recording) -> dict[str, tuple[CostTable, Cost]]:
    """The cost tables a burst is replayed with, and what a step of n rows costs under each."""
    memory_bound = prior_costs(3_600_000_000, None, on_gpu=False)
    gpu = prior_costs(3_600_000_000, None, on_gpu=True)
    return {
        "CPU, Q4_K_M (recorded)": (rec.table, rec.cost),
        "memory-bound (F16 estimate)": (memory_bound, memory_bound.verify),
        "GPU (estimate)": (gpu, gpu.verify),
    }


def plain(replies: list[list[int]], cost: Cost) -> float:
    """Seconds for plain batching to write every reply: one row a request a step."""
    left, spent = [len(r) for r in replies], 0.0
    while any(left):
        spent += cost(sum(1 for n in left if n))
        left = [max(0, n - 1) for n in left]
    return spent


def auto(rec: Recording, names: list[str], table: CostTable, cost: Cost, fair: bool) -> float:
    """Seconds for Auto (n-gram lookup) to write the burst's replies side by side."""
    requests = []
    for name in names:
        policy = AutoController(table, with_model=False)
        policy.begin_request()
        entry = rec.prompts[name]
        requests.append(_Request(entry["prompt"], entry["reply"], rec.drafter(name), policy))
    spent = 0.0
    while True:
        running = [r for r in requests if not r.done]
        if not running:
            return spent
        rounds = []
        for r in running:
            text = r.prompt + r.reply[: r.written]
            plan, proposals = plan_round(
                r.policy,
                text,
                draft_ceiling(MAX_TOKENS - r.written - 1, r.written),
                speculative=True,
                ngram=r.drafter,
                has_model=False,
            )
            rounds.append((plan, proposals))
        if len(running) > 1:
            plans = fit_plans(
                [(r.policy, plan) for r, (plan, _) in zip(running, rounds)],
                len(running),
                MAX_OUTPUT_ROWS - len(running),
                fair,
            )
            rounds = [(plan, proposals) for plan, (_, proposals) in zip(plans, rounds)]
        drafts = [copy_tokens(plan, proposals) for plan, proposals in rounds]
        rows = sum(len(d) + 1 for d in drafts)
        seconds = cost(rows)
        spent += seconds
        for r, (plan, proposals), draft in zip(running, rounds, drafts):
            accepted = agreement(draft, r.reply[r.written :])
            kept = r.reply[r.written : r.written + accepted + 1]
            observe_round(
                r.policy,
                plan,
                proposals,
                len(draft),
                accepted,
                0.0,
                seconds,
                kept,
                rows=rows if len(running) > 1 else 0,
            )
            r.written += len(kept)


def bursts(names: list[str], n: int) -> list[list[str]]:
    """Every prompt leads one burst of n, the next prompts in turn after it."""
    return [[names[(i + j) % len(names)] for j in range(n)] for i in range(len(names))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, metavar="N", help="replay only each reply's first N tokens")
    parser.add_argument("--n", default="2,4", help="requests at once (default 2,4)")
    args = parser.parse_args()
    sizes = [int(x) for x in args.n.split(",")]
    for path, _, title in RECORDINGS:
        if not path.exists():
            continue
        rec = Recording(path, args.tokens)
        names = list(rec.prompts)
        print(f"{rec.model}, {title} ({len(names)} prompts): aggregate over a burst of N requests sent at once")
        for shape, (table, cost) in shapes(rec).items():
            single = cost(1)
            for n in sizes:
                batched, rate_only, fair = [], [], []
                for burst in bursts(names, n):
                    replies = [rec.prompts[name]["reply"] for name in burst]
                    tokens = sum(len(r) for r in replies)
                    base = plain(replies, cost)
                    batched.append(tokens / base / (1 / single))
                    rate_only.append(base / auto(rec, burst, table, cost, fair=False))
                    fair.append(base / auto(rec, burst, table, cost, fair=True))
                print(
                    f"  {shape:28s} N={n}: plain batching {geometric_mean(batched):4.2f}x one stream; Auto over "
                    f"plain batching: step's rate alone {geometric_mean(rate_only):4.2f}x (worst "
                    f"{min(rate_only):4.2f}), nobody slower {geometric_mean(fair):4.2f}x (worst {min(fair):4.2f})"
                )


if __name__ == "__main__":
    main()
