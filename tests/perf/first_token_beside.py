"""A person's first token while two API clients are being answered, against the same when the engine is idle:
issue 42's bar, within 2x its idle time plus one step.

    python -m tests.perf.first_token_beside [--configs serve-plain,serve-auto] [--threads 2] [--f16 PATH]

`specchat-cli serve --parallel 3` runs the engine path the window's engine process runs (the same worker loop and
batch; the window's API takes at most two of the three sequences, so the person's chat always has one). For each
server and each of three questions (each new to the server, so no prompt is reused from its cache): the first
token's time with nothing else running; then, with two streamed API requests writing (ignore_eos), the same for
another question of the same length. One step: the median time between the API streams' token chunks while the
question was read. Prints each time, the ratio, and whether it is within 2x idle plus one step.
CPU-heavy: run it alone.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from pathlib import Path
from tempfile import TemporaryDirectory

from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET
from tests.perf.concurrency_servers import WARM_UP, _command, _stream
from tests.remote.llama_tools import free_port, start, stop, wait_for_port

# Pairs of questions of about the same length (chat-formatted: 80-110 tokens), the first asked idle, the second
# beside the API's requests; every question is new to the server.
CODE = "def total(items):\n    s = 0\n    for item in items:\n        s += item.price * item.count\n    return s\n"
QUESTIONS = (
    (f"What does this function do, in one sentence?\n{CODE}", f"Is this function correct for an empty list?\n{CODE}"),
    (f"Suggest a better name for this function.\n{CODE}", f"Rewrite this function with sum() and a generator.\n{CODE}"),
    (f"Which Python type hints fit this function?\n{CODE}", f"Write one pytest test for this function please.\n{CODE}"),
)
API_TOKENS = 160  # the API's requests outlast the person's first token
CLIENT = "Write a long Python module with a class for a bank account, with deposit, withdraw and history."


def _first_token(url: str, question: str) -> float:
    out: dict = {}
    _stream(url, question, 4, time.perf_counter(), out)
    return out["first"]


def _beside(url: str, question: str) -> tuple[float, float]:
    """The question's first token while two API requests write, and one step's time then."""
    streams: list[dict] = [{}, {}]
    began = time.perf_counter()
    threads = [
        threading.Thread(target=_stream, args=(url, f"{CLIENT} ({i})", API_TOKENS, began, streams[i])) for i in range(2)
    ]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 600
    while any(len(s.get("times", ())) < 4 for s in streams) and time.monotonic() < deadline:
        time.sleep(0.05)
    asked = time.perf_counter() - began
    first = _first_token(url, question)
    gaps = []
    for s in streams:
        chunks = sorted(set(s["times"]))
        gaps += [b - a for a, b in zip(chunks, chunks[1:]) if asked <= a <= asked + first + 1.0]
    for thread in threads:
        thread.join()
    return first, statistics.median(gaps) if gaps else 0.0


def bench(target: Path, draft: Path, threads: int, configs: list[str], log_dir: Path) -> None:
    print(f"\n## {target.name} (+ {draft.name}), {threads} threads, serve --parallel 3")
    print("| server | idle first token (s) | beside two API requests (s) | one step (s) | ratio | within 2x + a step |")
    print("|---|---|---|---|---|---|")
    for config in configs:
        port = free_port()
        log = log_dir / f"{config}.log"
        process = start(_command(config, target, draft, 3, threads, port), log)
        try:
            wait_for_port(port, process, log, timeout_s=600, http_health=True)
            url = f"http://127.0.0.1:{port}"
            _stream(url, WARM_UP, 32, time.perf_counter(), {})  # not timed: the first decodes allocate
            for alone, beside in QUESTIONS:
                idle = _first_token(url, alone)
                busy, step = _beside(url, beside)
                ok = "yes" if busy <= 2 * idle + step else "no"
                print(f"| {config} | {idle:.2f} | {busy:.2f} | {step:.2f} | {busy / idle:.2f} | {ok} |", flush=True)
        finally:
            stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--f16", type=Path, help="the target's F16 copy, measured after the Q4_K_M one")
    parser.add_argument("--configs", default="serve-plain,serve-auto")
    args = parser.parse_args()
    configs = [c for c in args.configs.split(",") if c.startswith("serve")]
    draft = REAL_MODELS_DIR / REAL_DRAFT
    with TemporaryDirectory() as tmp:
        for target in [REAL_MODELS_DIR / REAL_TARGET] + ([args.f16] if args.f16 else []):
            bench(target, draft, args.threads, configs, Path(tmp))


if __name__ == "__main__":
    main()
