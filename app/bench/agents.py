"""`specchat-cli bench --agents`: a recorded Claude Code session (app/bench/agent_replay.py) replayed against
`specchat-cli serve` and against llama.cpp's llama-server on the same model, one server at a time, each on a free
port of 127.0.0.1: per request its prompt tokens, the share read from the cache, time to first token and total,
then each server's total and SpecChat's total over the fastest llama-server's.

llama-server runs with `--jinja` (the model's own chat template, as ours) and the same context, once per
speculation it offers here: n-gram lookup (`--spec-type ngram-simple`) and, given --draft, the same draft model
(`-md`). Without llama-server (PATH or ~/.cache/specchat-llama-reference/bin) only ours runs, and
the report says so.

Ours runs with a home folder of its own (SPECCHAT_HOME, a temporary folder removed after): the conversation
states an earlier run saved (app.engine.local.kv_states) would otherwise answer a request's prompt from disk, and
the first request would measure a restore instead of a read."""

from __future__ import annotations

import argparse
import queue
import re
import signal
import socket
import os
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

from app.bench.agent_replay import RequestTiming, load_session, replay
from app.bench.suite import find_reference_tool, reference_env
from app.common.http_client import http_client

# The session the bench replays unless --session names another: recorded from Claude Code (its README says how).
DEFAULT_SESSION = Path(__file__).resolve().parents[2] / "tests" / "fixtures" / "agents" / "claude_code_session"
# The recorded session's prompt (Claude Code's with --tools Read,Edit,Write) and its turns need this much context.
MIN_CTX = 8192
START_DEADLINE_S = 300.0
REQUEST_DEADLINE_S = 900.0
# The bars: after the first request, this share of the prompt from the cache; the second request's first
# token within this many seconds; ours in at most this share of llama-server's total time.
CACHED_BAR = 0.9
SECOND_TTFT_BAR_S = 2.0
RATIO_BAR = 0.7


def run_agents(args: argparse.Namespace, log: Callable[[str], None]) -> dict:
    """The report: each server's timings over the session, and the ratio. Raises ValueError for a session folder
    that holds no request."""
    session = DEFAULT_SESSION
    requests = load_session(session)
    ctx = max(args.ctx, MIN_CTX)
    threads = ["--threads", str(args.threads)] if args.threads else []
    servers: list[dict] = []
    ours = [sys.executable, "-m", "app", "serve", "--target", str(args.target), "--ctx", str(ctx), "--port", "0"]
    ours += ["--draft", str(args.draft)] if args.draft else ["--ngram"]
    servers.append(_measure("SpecChat", ours + threads, _our_url, requests, args.max_tokens, log))
    binary = find_reference_tool("llama-server")
    skipped = None
    if binary is None or args.no_llama:
        skipped = "llama-server was not found (PATH or ~/.cache/specchat-llama-reference/bin), or --no-llama: ours only"
        log(skipped)
    else:
        base = [binary, "-m", str(args.target), "--jinja", "-c", str(ctx), "--host", "127.0.0.1"]
        base += ["-t", str(args.threads)] if args.threads else []
        variants = [("llama-server ngram-simple", ["--spec-type", "ngram-simple"])]
        if args.draft:
            variants.append(("llama-server draft", ["-md", str(args.draft)]))
        for label, extra in variants:
            port = _free_port()
            command = base + ["--port", str(port)] + extra
            servers.append(_measure(label, command, _health_url(port), requests, args.max_tokens, log, binary))
    return _report(session, servers, skipped)


def _measure(
    label: str,
    command: list[str],
    url_of: Callable[[queue.Queue], str],
    requests,
    max_tokens: int,
    log: Callable[[str], None],
    binary: Optional[str] = None,
) -> dict:
    log(f"{label}: starting")
    with _running(command, binary) as lines:
        try:
            url = url_of(lines)
        except TimeoutError as exc:
            log(f"{label}: {exc}")
            return {"server": label, "command": command, "error": str(exc), "requests": []}
        log(f"{label}: replaying {len(requests)} requests at {url}")
        timings = replay(url, requests, max_tokens, REQUEST_DEADLINE_S)
    for timing in timings:
        log(
            f"{label}: {timing.name} {timing.prompt_tokens} prompt tokens, {timing.total_s:.1f} s, {timing.error or ''}"
        )
    return {"server": label, "command": command, "requests": [_row(t) for t in timings]}


@contextmanager
def _running(command: list[str], binary: Optional[str]) -> Iterator[queue.Queue]:
    """The server running while the block runs, its stderr's lines in the queue; stopped with SIGINT (killed after
    30 s) on every way out. Ours (no `binary`) gets a fresh SPECCHAT_HOME, so nothing an earlier run saved is found."""
    with tempfile.TemporaryDirectory(prefix="specchat-bench-agents-") as home:
        env = reference_env(binary) if binary else {**os.environ, "SPECCHAT_HOME": home}
        process = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env
        )
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=_pump, args=(process.stderr, lines), daemon=True).start()
        try:
            yield lines
        finally:
            process.send_signal(signal.SIGINT)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(30)


def _pump(stream, lines: queue.Queue) -> None:
    for line in stream or ():
        lines.put(line)


def _our_url(lines: queue.Queue) -> str:
    """Ours says where it listens in its first line, once its models are loaded."""
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        try:
            line = lines.get(timeout=max(0.1, deadline - time.monotonic()))
        except queue.Empty:
            break
        found = re.search(r"at (http://127\.0\.0\.1:\d+)/v1", line)
        if found:
            return found.group(1)
    raise TimeoutError(f"the server did not say where it listens within {START_DEADLINE_S:.0f} s")


def _health_url(port: int) -> Callable[[queue.Queue], str]:
    """llama-server answers /health with 200 once its model is loaded (503 before)."""

    def wait(lines: queue.Queue) -> str:
        url = f"http://127.0.0.1:{port}"
        httpx = http_client()
        deadline = time.monotonic() + START_DEADLINE_S
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/health", timeout=5, trust_env=False).status_code == 200:
                    return url
            except Exception:  # not listening yet
                pass
            time.sleep(0.5)
        raise TimeoutError(f"llama-server did not answer /health within {START_DEADLINE_S:.0f} s")

    return wait


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _row(timing: RequestTiming) -> dict:
    return {
        "request": timing.name,
        "prompt_tokens": timing.prompt_tokens,
        "cached_tokens": timing.cached,
        "cached_share": timing.cached_share,
        "output_tokens": timing.output_tokens,
        "ttft_s": timing.ttft_s,
        "total_s": timing.total_s,
        "error": timing.error,
    }


def _report(session: Path, servers: list[dict], skipped: Optional[str]) -> dict:
    for server in servers:
        rows = server["requests"]
        server["total_s"] = sum(r["total_s"] for r in rows) if rows else None
        later = [r for r in rows[1:] if r["cached_tokens"] is not None]
        prompt = sum(r["prompt_tokens"] for r in later)
        server["cached_share_after_first"] = sum(r["cached_tokens"] for r in later) / prompt if prompt else None
        server["second_ttft_s"] = rows[1]["ttft_s"] if len(rows) > 1 else None
        server["errors"] = sum(1 for r in rows if r["error"])
    ours = servers[0]
    theirs = [s for s in servers[1:] if s["total_s"] is not None and not s["errors"]]
    fastest = min(theirs, key=lambda s: s["total_s"]) if theirs else None
    ratio = ours["total_s"] / fastest["total_s"] if fastest and ours["total_s"] is not None else None
    return {
        "session": str(session),
        "servers": servers,
        "fastest_llama_server": fastest["server"] if fastest else None,
        "ratio": ratio,
        "llama_server_skipped": skipped,
        "bars": {
            "cached_share_after_first": CACHED_BAR,
            "second_ttft_s": SECOND_TTFT_BAR_S,
            "ratio": RATIO_BAR,
        },
    }


def print_agents_report(report: dict) -> None:
    """The table for people: one block per server, then the totals and the ratio against the bars."""
    print(f"session: {report['session']}")
    for server in report["servers"]:
        print(f"\n{server['server']}")
        if server.get("error"):
            print(f"  {server['error']}")
            continue
        print(f"  {'request':<10} {'prompt':>7} {'cached':>7} {'TTFT s':>8} {'total s':>8} {'out':>5}")
        for row in server["requests"]:
            share = "-" if row["cached_share"] is None else f"{row['cached_share']:.0%}"
            ttft = "-" if row["ttft_s"] is None else f"{row['ttft_s']:.2f}"
            print(
                f"  {row['request']:<10} {row['prompt_tokens']:>7} {share:>7} {ttft:>8} {row['total_s']:>8.2f}"
                f" {row['output_tokens']:>5}" + (f"  error: {row['error']}" if row["error"] else "")
            )
        share = server["cached_share_after_first"]
        second = server["second_ttft_s"]
        print(
            f"  total {server['total_s']:.1f} s; cached after the first: "
            f"{'-' if share is None else f'{share:.0%}'} (bar {CACHED_BAR:.0%}); second request's TTFT: "
            f"{'-' if second is None else f'{second:.2f} s'} (bar {SECOND_TTFT_BAR_S:.0f} s)"
        )
    if report["llama_server_skipped"]:
        print(f"\n{report['llama_server_skipped']}")
    elif report["ratio"] is not None:
        print(
            f"\nSpecChat / {report['fastest_llama_server']}: {report['ratio']:.2f}x total time "
            f"(bar {RATIO_BAR}x; one run)"
        )
