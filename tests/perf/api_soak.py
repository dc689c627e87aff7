"""`specchat-cli serve` (the real CLI, a subprocess) under a mix of hostile and well-behaved requests: every
well-behaved one is answered, the process stays alive, and its memory stays bounded.

    python -m tests.perf.api_soak TARGET.gguf [--requests 1000]

prints one line of figures. tests/serve/test_api_soak.py runs a short version on the suite's tiny model, and the
1,000 requests as a `slow` test. One hostile kind crashes the engine process (the tests' abort hook, turned on for
this server only): its request gets a 500 with a sentence, and the engine restarts with the model.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import queue
import re
import socket
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

try:  # the HTTP client the app uses (pyproject.toml): httpx2, or httpx on Python 3.10
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

from app.platform.process_memory import rss_mib
from tests.support.processes import cli_command

ROOT = Path(__file__).resolve().parents[2]
HI = [{"role": "user", "content": "hi"}]
CRASH_WORD = "soak-crash-the-engine"

# (name, what is sent): a body (bytes), extra headers, or a raw-socket behaviour.
HOSTILE = [
    ("deep nesting", b'{"messages": ' + b"[" * 50_000 + b"]" * 50_000 + b"}", {}),
    ("huge integer", b'{"max_tokens": ' + b"9" * 5000 + b', "messages": [{"role": "user", "content": "hi"}]}', {}),
    (
        "400-digit temperature",
        b'{"temperature": 1' + b"0" * 400 + b', "messages": [{"role": "user", "content": "hi"}]}',
        {},
    ),
    ("lone surrogate", json.dumps({"messages": [{"role": "user", "content": "a\ud800"}]}).encode(), {}),
    ("40,000 messages", json.dumps({"max_tokens": 2, "messages": HI * 40_000}).encode(), {}),
    ("not JSON", b"{not json", {}),
    ("not an object", b"[1, 2, 3]", {}),
    ("foreign origin", json.dumps({"max_tokens": 2, "messages": HI}).encode(), {"Origin": "https://evil.example"}),
    ("other local port", json.dumps({"max_tokens": 2, "messages": HI}).encode(), {"Origin": "http://localhost:1"}),
    ("malformed origin", json.dumps({"max_tokens": 2, "messages": HI}).encode(), {"Origin": "http://[::1"}),
    ("rebound host", json.dumps({"max_tokens": 2, "messages": HI}).encode(), {"Host": "evil.example"}),
    ("malformed host", json.dumps({"max_tokens": 2, "messages": HI}).encode(), {"Host": "localhost:99999"}),
    ("too large", b" " * (5 << 20), {}),
    ("max_tokens past the cap", json.dumps({"max_tokens": 10**9, "messages": HI}).encode(), {}),
    ("bad role", json.dumps({"messages": [{"role": "wizard", "content": "hi"}]}).encode(), {}),
    ("messages not a list", json.dumps({"messages": "hi"}).encode(), {}),
    ("max_tokens a string", json.dumps({"max_tokens": "2", "messages": HI}).encode(), {}),
    ("content a number", json.dumps({"messages": [{"role": "user", "content": 5}]}).encode(), {}),
    # Issue 44's classes that a request can carry: a schema that once made llama.cpp's grammar parser recurse until
    # SIGSEGV, an earlier call's arguments nested too deep, and fields of the wrong JSON type.
    (
        "grammar bomb",
        json.dumps(
            {
                "max_tokens": 2,
                "messages": HI,
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {
                        "name": "x",
                        "schema": {"type": "object", "properties": {"text": {"type": "string", "maxLength": 100_000}}},
                    },
                },
            }
        ).encode(),
        {},
    ),
    (
        "deep call arguments",
        json.dumps(
            {
                "max_tokens": 2,
                "messages": [
                    {"role": "user", "content": "hi"},
                    {
                        "role": "assistant",
                        "content": "",
                        "tool_calls": [
                            {
                                "id": "c1",
                                "type": "function",
                                "function": {"name": "f", "arguments": "[" * 5_000 + "]" * 5_000},
                            }
                        ],
                    },
                    {"role": "tool", "tool_call_id": "c1", "content": "ok"},
                    {"role": "user", "content": "hi"},
                ],
            }
        ).encode(),
        {},
    ),
    ("reasoning_format a list", json.dumps({"max_tokens": 2, "messages": HI, "reasoning_format": ["x"]}).encode(), {}),
    ("n a boolean", json.dumps({"max_tokens": 2, "messages": HI, "n": True}).encode(), {}),
    ("seed of 10^30", json.dumps({"max_tokens": 2, "messages": HI, "seed": 10**30}).encode(), {}),
    ("timings_per_token a number", json.dumps({"max_tokens": 2, "messages": HI, "timings_per_token": 5}).encode(), {}),
    ("engine crash", json.dumps({"max_tokens": 2, "messages": [{"role": "user", "content": CRASH_WORD}]}).encode(), {}),
]
CRASH = "engine crash"
SOCKET_KINDS = ("idle socket", "slowloris head", "gone mid-stream")
# One round: every hostile kind once, each after a well-behaved request (half of all requests are well-behaved).
ROUND = [kind for hostile in HOSTILE + [(k, None, {}) for k in SOCKET_KINDS] for kind in (("good", None, {}), hostile)]


@dataclass
class SoakResult:
    requests: int
    well_behaved: int
    answered: int
    hostile_statuses: dict
    peak_rss_mb: float  # the HTTP side's process (the CLI's)
    first_rss_mb: float  # the same, after the first well-behaved reply
    peak_engine_rss_mb: float  # the engine process's, whichever one runs
    alive: bool
    wall_s: float
    crash_errors: list  # the error sentences the crashing requests got
    restart_s: list  # each restart's seconds, as serve logged them

    def line(self) -> str:
        statuses = ", ".join(f"{k}: {v}" for k, v in sorted(self.hostile_statuses.items()))
        restarts = (
            f"{len(self.restart_s)} restarts of {min(self.restart_s):.1f}-{max(self.restart_s):.1f} s"
            if self.restart_s
            else "no restarts"
        )
        return (
            f"{self.requests} requests ({self.well_behaved} well-behaved, {self.answered} answered), "
            f"peak RSS {self.peak_rss_mb:.0f} MB ({self.peak_rss_mb - self.first_rss_mb:+.0f} MB after the first "
            f"reply), engine process {self.peak_engine_rss_mb:.0f} MB, {restarts}, alive: {self.alive}, "
            f"{self.wall_s:.0f} s; hostile: {statuses}"
        )


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    try:
        return [int(p) for p in path.read_text().split()]
    except OSError:
        return []


def _engine_rss_mib(cli_pid: int) -> float:
    """The RSS of the CLI's engine process (its multiprocessing child; the other is the resource tracker)."""
    for pid in _children(cli_pid):
        try:
            if b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return rss_mib(pid)
        except OSError:
            continue
    return 0.0


def _raw(host: str, port: int, kind: str) -> str:
    sock = socket.create_connection((host, port), timeout=5)
    try:
        if kind == "slowloris head":
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        elif kind == "gone mid-stream":
            body = json.dumps({"max_tokens": 64, "stream": True, "messages": HI}).encode()
            sock.sendall(
                b"POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                b"\r\nContent-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body
            )
            sock.recv(256)
        return kind
    finally:
        if kind != "idle socket":
            sock.close()
        else:
            _IDLE.append(sock)


_IDLE: list[socket.socket] = []


def soak(target: Path, requests: int = 1000, threads: int = 1) -> SoakResult:
    process = subprocess.Popen(
        cli_command(
            "serve",
            "--target",
            str(target),
            "--ngram",
            "--port",
            "0",
            "--threads",
            str(threads),
            "--max-tokens",
            "64",
        ),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, SPECCHAT_TEST_ENGINE_ABORT_ON=CRASH_WORD),
    )
    lines: queue.Queue = queue.Queue()
    reader = threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True)
    reader.start()
    started = time.monotonic()
    statuses: dict = {}
    crash_errors: list = []
    answered = well_behaved = 0
    peak = first = engine_peak = 0.0
    try:
        found = re.search(r"at (http://(127\.0\.0\.1):(\d+))/v1", lines.get(timeout=120))
        if not found:
            raise RuntimeError("serve did not start")
        url, host, port = found.group(1), found.group(2), int(found.group(3))
        cli = (_children(process.pid) or [process.pid])[0]  # under `python -m app`'s supervisor
        kinds = itertools.cycle(ROUND)
        with httpx.Client(timeout=httpx.Timeout(60.0), trust_env=False) as http:
            for n in range(requests):
                name, body, headers = next(kinds)
                if name == "good":
                    well_behaved += 1
                    reply = http.post(f"{url}/v1/chat/completions", json={"max_tokens": 2, "messages": HI})
                    answered += reply.status_code == 200 and bool(reply.json()["choices"][0]["message"])
                elif name in SOCKET_KINDS:
                    _raw(host, port, name)
                    statuses[name] = statuses.get(name, 0) + 1
                else:
                    reply = http.post(
                        f"{url}/v1/chat/completions",
                        content=body,
                        headers={"Content-Type": "application/json", **headers},
                    )
                    statuses[f"{name} {reply.status_code}"] = statuses.get(f"{name} {reply.status_code}", 0) + 1
                    if name == CRASH:
                        crash_errors.append(reply.json().get("error", {}).get("message", ""))
                if n % 25 == 0 or n == 1:
                    rss = rss_mib(cli)
                    first = first or rss
                    peak = max(peak, rss)
                    engine_peak = max(engine_peak, _engine_rss_mib(cli))
        alive = process.poll() is None
        peak = max(peak, rss_mib(cli))
        engine_peak = max(engine_peak, _engine_rss_mib(cli))
    finally:
        for sock in _IDLE:
            sock.close()
        _IDLE.clear()
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    reader.join(15)
    restart_s = []
    while not lines.empty():
        back = re.search(r"The engine is back \((\d+\.\d+) s", lines.get())
        if back:
            restart_s.append(float(back.group(1)))
    return SoakResult(
        requests,
        well_behaved,
        answered,
        statuses,
        peak,
        first,
        engine_peak,
        alive,
        time.monotonic() - started,
        crash_errors,
        restart_s,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target")
    parser.add_argument("--requests", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    print(soak(Path(args.target), args.requests, args.threads).line())


if __name__ == "__main__":
    main()
