"""Where the model runs, side by side in one run: tok/s plain vs speculative on this machine, with the target spread
over 1 and 2 loopback RPC workers, and on llama-server with and without its draft; plus the verify cost curve
(a batch of 8 against one token) where SpecChat measures it. Prints a Markdown table for the performance log.

    python -m tests.perf.where_it_runs [--tokens 64] [--threads 2]

Needs the real Qwen pair (~/.cache/specchat-test-models) and llama.cpp's tools
(~/.cache/specchat-llama-reference/bin). CPU-heavy: run it alone.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, TokenEvent
from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET
from tests.remote.llama_tools import TOOLS_BIN, free_port, start, stop, wait_for_port

MESSAGES = [
    {
        "role": "user",
        "content": "Write a Python function that checks whether a string is a palindrome, "
        "with a docstring and three doctest examples.",
    }
]


DRAFT_MAX = 4  # the same k as llama-server's --spec-draft-n-max below, so the rows compare like with like


def _run(engine, speculative: bool, tokens: int, repeats: int, auto: bool = False) -> tuple[float, str, bool]:
    """tok/s (the best of `repeats`: on a shared machine a disturbed run is only ever slower), acceptance, and
    whether any token was the draft's. `auto`: the controller picks the draft length (and drafter) each round."""
    best = None
    for _ in range(repeats):
        config = GenerationConfig(
            max_tokens=tokens,
            temperature=0.0,
            speculative=speculative,
            drafter="auto" if auto else "model",
            draft_max=None if auto else (DRAFT_MAX if speculative else 0),
        )
        sources, stats = [], None
        for event in engine.chat(MESSAGES, config):
            if isinstance(event, TokenEvent):
                sources.append(event.source)
            elif isinstance(event, FinishedEvent):
                stats = event.stats
        acceptance = f"{stats.acceptance_rate:.0%}" if stats.drafted else "-"
        result = (stats.tokens_per_second, acceptance, "draft" in sources)
        best = result if best is None or result[0] > best[0] else best
    return best


def _print(row: tuple) -> tuple:
    label, plain, spec, acceptance, highlighted, curve, auto = row
    auto_text = f"{auto:.1f} ({auto / plain:.2f}x)" if auto else "set by the server"
    print(
        f"| {label} | {plain:.1f} | {spec:.1f} ({spec / plain:.2f}x) | {auto_text} | {acceptance} | {highlighted} "
        f"| {curve} |",
        flush=True,
    )
    return row


def _local_rows(args, workers: tuple[str, ...], label: str) -> list[tuple]:
    from app.engine.local.engine import SpecEngine

    engine = SpecEngine(LoadSettings(n_ctx=2048, n_threads=args.threads, rpc_servers=workers))
    try:
        engine.load_target(REAL_MODELS_DIR / REAL_TARGET)
        engine.load_draft(REAL_MODELS_DIR / REAL_DRAFT)
        costs = engine.measure_costs()
        curve = f"{costs.verify(8) / costs.verify(1):.1f}x"
        plain, _, _ = _run(engine, False, args.tokens, args.repeats)
        spec, acceptance, highlighted = _run(engine, True, args.tokens, args.repeats)
        auto, _, _ = _run(engine, True, args.tokens, args.repeats, auto=True)
    finally:
        engine.close()
    return [_print((label, plain, spec, acceptance, "yes" if highlighted else "no", curve, auto))]


def _server_rows(args, log_dir: Path) -> list[tuple]:
    from app.engine.remote.engine import RemoteEngine
    from app.engine.targets import ServerModel
    from app.engine.remote.http import list_models

    speeds = {}
    for with_draft in (False, True):
        port = free_port()
        cmd = [
            TOOLS_BIN / "llama-server",
            "-m",
            REAL_MODELS_DIR / REAL_TARGET,
            "--host",
            "127.0.0.1",
            "--port",
            port,
            "-t",
            args.threads,
            "--temp",
            "0",
            "-c",
            2048,
            "-np",
            1,
        ]
        if with_draft:
            cmd += ["-md", REAL_MODELS_DIR / REAL_DRAFT, "--spec-type", "draft-simple", "--spec-draft-n-max", 4]
        process = start(cmd, log_dir / f"server-{with_draft}.log")
        try:
            wait_for_port(port, process, log_dir / f"server-{with_draft}.log", http_health=True)
            url = f"http://127.0.0.1:{port}"
            engine = RemoteEngine(LoadSettings(n_ctx=2048), api_key_for=lambda u: None)
            engine.load_target(ServerModel.at(url, list_models(url)[0].id))
            speeds[with_draft] = _run(engine, True, args.tokens, args.repeats)
        finally:
            stop(process)
    plain = speeds[False][0]
    spec, acceptance, highlighted = speeds[True]
    return [
        _print(
            (
                "llama-server on 127.0.0.1 (without / with -md draft, k=4)",
                plain,
                spec,
                acceptance,
                "yes" if highlighted else "no",
                "n/a",
                None,
            )
        )
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    print(
        f"Qwen2.5-Coder 1.5B target, 0.5B draft, Q4_K_M, greedy, {args.tokens} tokens, {args.threads} threads, "
        f"k={DRAFT_MAX}, best of {args.repeats}"
    )
    print()
    print(
        f"| where the target ran | plain tok/s | draft model, k={DRAFT_MAX}: tok/s (vs plain) | auto: tok/s (vs plain) "
        "| acceptance at k=4 | per-token highlighting | verify 8 / 1 token |"
    )
    print("|---|---|---|---|---|---|---|", flush=True)
    _local_rows(args, (), "this machine's CPU")
    with tempfile.TemporaryDirectory() as tmp:
        log_dir = Path(tmp)
        processes, workers = [], []
        try:
            for i in range(2):
                port = free_port()
                process = start(
                    [TOOLS_BIN / "ggml-rpc-server", "-H", "127.0.0.1", "-p", port, "-t", args.threads],
                    log_dir / f"rpc{i}.log",
                )
                processes.append(process)
                wait_for_port(port, process, log_dir / f"rpc{i}.log", timeout_s=30)
                workers.append(f"127.0.0.1:{port}")
            _local_rows(args, tuple(workers[:1]), "target on 1 loopback RPC worker, draft local")
            _local_rows(args, tuple(workers), "target on 2 loopback RPC workers, draft local")
        finally:
            for process in processes:
                stop(process)
        _server_rows(args, log_dir)


if __name__ == "__main__":
    main()
