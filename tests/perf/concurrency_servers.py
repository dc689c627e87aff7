"""Many requests at once through servers: `specchat-cli serve --parallel` against llama-server `-np`, in one run.

    python -m tests.perf.concurrency_servers [--n 1,2,4] [--tokens 64] [--threads 2] [--f16 PATH] [--only-f16]
                                             [--configs serve-plain,...]

Each server is started once with room for the largest N (serve `--parallel N`, llama-server `-np N`, each with
CONTEXT tokens a request), warmed by one whole request of another question, then sent N streamed requests at once for each N (the four
chat questions of tests/perf/concurrency.py, greedy, ignore_eos, --tokens each). Prints, per server and N, the
aggregate tok/s (every token over the time until the last request ended), its ratio to serve-plain at N = 1 of
the same run, the full-batch tok/s (tokens written while all N were writing, over that time: a server kept full
by a queue), each request's time to its first token, and its own tok/s. Servers:

- serve-plain, serve-ngram (Auto over n-gram lookup), serve-auto (Auto with the 0.5B draft and n-gram lookup),
  serve-model-4 (the draft model fixed at 4);
- llama-plain, llama-ngram-mod, llama-draft-4 (`-md` with `--spec-draft-n-max 4`): llama-server, built by
  ../shared/tools/build-llama-reference.sh.

CPU-heavy: run it alone; on a shared machine only the ratios within one run mean something.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import urllib.request
from pathlib import Path
from tempfile import TemporaryDirectory

from app.bench.concurrent import QUESTIONS, full_batch_rate
from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET
from tests.remote.llama_tools import TOOLS_BIN, free_port, start, stop, wait_for_port
from tests.support.processes import cli_command

CONTEXT = 1024  # tokens a request
WARM_UP = "Write a short Python class for a stack with push, pop and peek."
CONFIGS = (
    "serve-plain",
    "serve-ngram",
    "serve-auto",
    "serve-model-4",
    "llama-plain",
    "llama-ngram-mod",
    "llama-draft-4",
)


def _command(config: str, target: Path, draft: Path, n: int, threads: int, port: int) -> list:
    if config.startswith("serve"):
        extra = {
            "serve-plain": [],
            "serve-ngram": ["--ngram"],
            "serve-auto": ["--draft", draft],
            "serve-model-4": ["--draft", draft, "--draft-max", 4],
        }[config]
        return cli_command(
            "serve",
            "--target",
            target,
            *extra,
            "--port",
            port,
            "--threads",
            threads,
            "--ctx",
            CONTEXT,
            "--parallel",
            n,
        )
    extra = {
        "llama-plain": ["--spec-type", "none"],
        "llama-ngram-mod": ["--spec-type", "ngram-mod"],
        "llama-draft-4": ["-md", draft, "--spec-type", "draft-simple", "--spec-draft-n-max", 4],
    }[config]
    return [
        TOOLS_BIN / "llama-server",
        "-m",
        target,
        *extra,
        "--host",
        "127.0.0.1",
        "--port",
        port,
        "-t",
        threads,
        "-c",
        CONTEXT * n,
        "-np",
        n,
        "--jinja",
        "--temp",
        "0",
    ]


def _stream(url: str, question: str, tokens: int, began: float, out: dict) -> None:
    body = {
        "model": "target",
        "messages": [{"role": "user", "content": question}],
        "max_tokens": tokens,
        "temperature": 0,
        "ignore_eos": True,
        "stream": True,
    }
    request = urllib.request.Request(
        f"{url}/v1/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    first, pieces, times = None, 0, []
    out["times"] = times  # filled as tokens come: a caller may watch it grow
    with urllib.request.urlopen(request, timeout=1800) as response:
        for raw in response:
            line = raw.decode("utf-8", "replace").strip()
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            chunk = json.loads(line[6:])
            if any((c.get("delta") or {}).get("content") for c in chunk.get("choices") or []):
                now = time.perf_counter() - began
                first = first if first is not None else now
                pieces += 1
                # serve names each token of a chunk; llama-server sends a token a chunk
                times += [now] * max(1, len((chunk.get("specchat") or {}).get("tokens") or []))
    out.update(first=first or 0.0, end=time.perf_counter() - began, pieces=pieces, times=times)


def _at_once(url: str, n: int, tokens: int) -> dict:
    results: list[dict] = [{} for _ in range(n)]
    began = time.perf_counter()
    threads = [
        threading.Thread(target=_stream, args=(url, QUESTIONS[i % len(QUESTIONS)], tokens, began, results[i]))
        for i in range(n)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    end = max(r["end"] for r in results)
    steady = full_batch_rate(
        [t for r in results for t in r["times"]], [r["first"] for r in results], [r["end"] for r in results]
    )
    return {
        "aggregate": n * tokens / end,
        "full_batch": steady,
        "ttft": [r["first"] for r in results],
        "speed": [tokens / max(1e-9, r["end"] - r["first"]) for r in results],
    }


def bench(
    target: Path, draft: Path, ns: list[int], tokens: int, threads: int, configs: tuple[str, ...], log_dir: Path
) -> None:
    print(
        f"\n## {target.name} (+ {draft.name}), {threads} threads, {tokens} tokens a request, "
        f"servers started for {max(ns)} at once, {CONTEXT} tokens each"
    )
    print(
        "| server | N | aggregate tok/s | x serve-plain N=1 | full-batch tok/s | first token (s) per request "
        "| tok/s per request |"
    )
    print("|---|---|---|---|---|---|---|")
    base = 0.0
    for config in configs:
        port = free_port()
        log = log_dir / f"{config}.log"
        process = start(_command(config, target, draft, max(ns), threads, port), log)
        try:
            wait_for_port(port, process, log, timeout_s=600, http_health=True)
            url = f"http://127.0.0.1:{port}"
            # Not timed: the first decodes after a load allocate, and a controller learns this machine's speed. A
            # question of its own: a drafter that keeps what earlier requests wrote (llama-server's ngram-mod)
            # would otherwise copy the timed reply from it.
            _stream(url, WARM_UP, tokens, time.perf_counter(), {})
            for n in ns:
                r = _at_once(url, n, tokens)
                base = base or r["aggregate"]
                print(
                    f"| {config} | {n} | {r['aggregate']:.1f} | {r['aggregate'] / base:.2f} | {r['full_batch']:.1f} | "
                    f"{' '.join(f'{t:.2f}' for t in r['ttft'])} | {' '.join(f'{s:.1f}' for s in r['speed'])} |",
                    flush=True,
                )
        finally:
            stop(process)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--n", default="1,2,4", help="request counts, comma-separated")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--f16", type=Path, help="the target's F16 copy (/work/shared/tools/make-f16-target.py)")
    parser.add_argument("--only-f16", action="store_true", help="skip the Q4_K_M target")
    parser.add_argument("--configs", default=",".join(CONFIGS), help=f"some of {', '.join(CONFIGS)}, in order")
    args = parser.parse_args()
    ns = [int(x) for x in args.n.split(",")]
    configs = tuple(c for c in args.configs.split(",") if c in CONFIGS)
    if any(c.startswith("llama") for c in configs) and not (TOOLS_BIN / "llama-server").is_file():
        print(f"llama-server is not built in {TOOLS_BIN}: ../shared/tools/build-llama-reference.sh", file=sys.stderr)
        configs = tuple(c for c in configs if not c.startswith("llama"))
    draft = REAL_MODELS_DIR / REAL_DRAFT
    with TemporaryDirectory() as tmp:
        targets = ([] if args.only_f16 else [REAL_MODELS_DIR / REAL_TARGET]) + ([args.f16] if args.f16 else [])
        for target in targets:
            bench(target, draft, ns, args.tokens, args.threads, configs, Path(tmp))


if __name__ == "__main__":
    main()
