"""An agent's edit loop, through `specchat-cli serve` and through llama-server, side by side in one run.

    python -m tests.perf.agent_session [--turns 4] [--tokens 600] [--threads 2] [--only serve,plain,...]

Each turn sends what Aider's whole-file edit format sends: a system prompt, the running conversation, and a user
message holding the whole current file and one instruction; the reply is the whole file again, which the next turn
edits. Every server answers its own loop (greedy, so the loops agree up to the servers' numerics), one server at a
time so that none slows another. Servers, at their defaults otherwise:

- serve: `specchat-cli serve --ngram` (Auto over n-gram lookup and, off by default, no history);
- plain, ngram-simple, ngram-mod: llama-server (built by ../shared/tools/build-llama-reference.sh) with
  `--spec-type none|ngram-simple|ngram-mod`, its prompt cache (`--cache-ram`) at its default.

Prints wall seconds per turn for each, the totals, and serve's total over the best llama-server's. CPU-heavy: run it
alone; on a shared machine only the ratios within one run mean something.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from tempfile import TemporaryDirectory

from tests.conftest import REAL_MODELS_DIR, REAL_TARGET
from tests.remote.llama_tools import TOOLS_BIN, free_port, start, stop, wait_for_port
from tests.support.processes import cli_command

SYSTEM = (
    "Act as an expert software developer. Always use best practices when coding. When you edit a file, reply "
    "with the whole updated file in one ```python fenced block, and nothing after it."
)

SOURCE = '''"""A tiny inventory of items with prices and quantities."""

from dataclasses import dataclass, field


@dataclass
class Item:
    name: str
    price: float
    qty: int = 0


@dataclass
class Inventory:
    items: dict = field(default_factory=dict)

    def add(self, name, price, qty=1):
        if name in self.items:
            self.items[name].qty += qty
        else:
            self.items[name] = Item(name, price, qty)

    def remove(self, name, qty=1):
        item = self.items[name]
        item.qty -= qty
        if item.qty <= 0:
            del self.items[name]

    def total(self):
        return sum(item.price * item.qty for item in self.items.values())

    def names(self):
        return sorted(self.items)

    def cheapest(self):
        return min(self.items.values(), key=lambda item: item.price)

    def report(self):
        lines = [f"{item.name}: {item.qty} x {item.price:.2f}" for item in self.items.values()]
        return "\\n".join(lines)
'''

INSTRUCTIONS = [
    "Add type hints to every method of Inventory.",
    "Make remove raise a KeyError with a clear message when the item is missing.",
    "Rename the method cheapest to least_expensive.",
    "Add a docstring to every method of Inventory.",
    "Make report list the items sorted by name.",
    "Add a method count that returns the total quantity of all items.",
]

FENCE = re.compile(r"```(?:python)?\n(.*?)```", re.S)


def _user_message(source: str, instruction: str) -> str:
    return f"inventory.py\n```python\n{source}```\n\n{instruction}"


def _post(url: str, body: dict, timeout_s: float = 900.0) -> dict:
    request = urllib.request.Request(
        f"{url}/v1/chat/completions", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout_s) as response:
        return json.loads(response.read())


def run_loop(url: str, turns: int, tokens: int) -> list[tuple[float, int, int]]:
    """Each turn's (wall seconds, completion tokens, prompt tokens the server read from its cache or -1)."""
    messages: list[dict] = [{"role": "system", "content": SYSTEM}]
    source, results = SOURCE, []
    for turn in range(turns):
        messages.append({"role": "user", "content": _user_message(source, INSTRUCTIONS[turn % len(INSTRUCTIONS)])})
        body = {"model": "target", "messages": messages, "max_tokens": tokens, "temperature": 0, "seed": 1}
        began = time.monotonic()
        reply = _post(url, body)
        wall = time.monotonic() - began
        text = reply["choices"][0]["message"]["content"] or ""
        usage = reply.get("usage") or {}
        cached = (usage.get("prompt_tokens_details") or {}).get("cached_tokens", -1)
        results.append((wall, int(usage.get("completion_tokens", 0)), int(cached)))
        messages.append({"role": "assistant", "content": text})
        found = FENCE.search(text)
        if found:
            source = found.group(1)
    return results


def _serve(model: Path, threads: int, ctx: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = subprocess.Popen(
        cli_command(
            "serve",
            "--target",
            str(model),
            "--ngram",
            "--port",
            str(port),
            "--threads",
            str(threads),
            "--ctx",
            str(ctx),
        ),
        stdout=open(log, "wb"),
        stderr=subprocess.STDOUT,
    )
    wait_for_port(port, process, log, http_health=True)
    return process, f"http://127.0.0.1:{port}"


def _llama_server(model: Path, spec: str, threads: int, ctx: int, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    process = start(
        [
            TOOLS_BIN / "llama-server",
            "-m",
            model,
            "--port",
            port,
            "--host",
            "127.0.0.1",
            "-t",
            threads,
            "-c",
            ctx,
            "--jinja",
            "--spec-type",
            spec,
            "--temp",
            "0",
        ],
        log,
    )
    wait_for_port(port, process, log, http_health=True)
    return process, f"http://127.0.0.1:{port}"


CONFIGS = ("serve", "plain", "ngram-simple", "ngram-mod")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=4)
    parser.add_argument("--tokens", type=int, default=600)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx", type=int, default=8192)
    parser.add_argument("--model", type=Path, default=REAL_MODELS_DIR / REAL_TARGET)
    parser.add_argument("--only", default=",".join(CONFIGS), help="comma-separated subset of " + ", ".join(CONFIGS))
    args = parser.parse_args(argv)
    wanted = [c for c in args.only.split(",") if c]
    if any(c != "serve" for c in wanted) and not (TOOLS_BIN / "llama-server").is_file():
        print(f"llama-server is not built in {TOOLS_BIN}: ../shared/tools/build-llama-reference.sh", file=sys.stderr)
        return 2
    table: dict[str, list[tuple[float, int, int]]] = {}
    with TemporaryDirectory() as scratch:
        for config in wanted:
            log = Path(scratch) / f"{config}.log"
            process = None
            try:
                if config == "serve":
                    process, url = _serve(args.model, args.threads, args.ctx, log)
                else:
                    spec = "none" if config == "plain" else config
                    process, url = _llama_server(args.model, spec, args.threads, args.ctx, log)
                table[config] = run_loop(url, args.turns, args.tokens)
            finally:
                stop(process)
            walls = " ".join(f"{wall:6.1f}" for wall, _, _ in table[config])
            print(
                f"{config:>13}: {walls}  total {sum(w for w, _, _ in table[config]):7.1f} s  "
                f"tokens {[n for _, n, _ in table[config]]}  cached {[c for _, _, c in table[config]]}",
                flush=True,
            )
    totals = {config: sum(w for w, _, _ in rows) for config, rows in table.items()}
    others = {c: t for c, t in totals.items() if c != "serve"}
    if "serve" in totals and others:
        best = min(others, key=others.get)
        print(
            f"serve / best llama-server ({best}) in wall time: {others[best] / totals['serve']:.2f}x faster "
            f"({totals['serve']:.1f} s vs {others[best]:.1f} s)"
        )
        for config, total in others.items():
            print(f"  vs {config}: {total / totals['serve']:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
