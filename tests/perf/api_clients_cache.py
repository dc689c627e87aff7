"""Two API clients taking turns (real model): how much of each request's prompt comes from the kept KV cache, and
its prompt time against a turn that directly continues the same conversation.

    python -m tests.perf.api_clients_cache --url http://127.0.0.1:1234 [--rounds 2]

Against a running `specchat-cli serve` (or llama-server): client A, client B, then each round A after B, A again
(continued), B after A, B again. Non-streamed requests with "timings_per_token", whose `timings` give the prompt
tokens read (prompt_n), reused (cache_n) and the prompt time (prompt_ms), as llama-server reports them.
"""

from __future__ import annotations

import argparse
import json
import statistics
import urllib.request

from tests.perf.conversation_cache import SUBJECTS, conversation


def ask(url: str, messages: list[dict], label: str, reply_tokens: int) -> dict:
    body = json.dumps(
        {"messages": messages, "max_tokens": reply_tokens, "temperature": 0, "timings_per_token": True}
    ).encode()
    request = urllib.request.Request(url + "/v1/chat/completions", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        reply = json.load(response)
    t = reply["timings"]
    read, reused = int(t["prompt_n"]), int(t.get("cache_n", 0))
    share = reused / max(1, read + reused)
    print(
        f"{label:<20} prompt {read + reused:5d}  from cache {reused:5d} ({share:4.0%})  "
        f"prompt {t['prompt_ms'] / 1000:6.2f} s",
        flush=True,
    )
    messages.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})
    return {"share": share, "prompt_s": t["prompt_ms"] / 1000}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf.api_clients_cache", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--url", default="http://127.0.0.1:1234")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--reply-tokens", type=int, default=16)
    args = parser.parse_args(argv)
    chats = {"A": conversation(SUBJECTS[0]), "B": conversation(SUBJECTS[1])}
    for name, messages in chats.items():
        ask(args.url, messages, f"{name} (first reading)", args.reply_tokens)
    shares, ratios = [], []
    for n in range(args.rounds):
        for name, messages in chats.items():
            messages.append({"role": "user", "content": f"Question {n}: what would you change first?"})
            back = ask(args.url, messages, f"{name} after the other", args.reply_tokens)
            messages.append({"role": "user", "content": f"Question {n}: and what would you leave as it is?"})
            cont = ask(args.url, messages, f"{name} continued", args.reply_tokens)
            shares.append(back["share"])
            ratios.append(back["prompt_s"] / max(1e-3, cont["prompt_s"]))
    print(
        f"after the other client: {min(shares):.1%} from cache at least; prompt time over a continued turn's: "
        f"median {statistics.median(ratios):.2f}x over {len(ratios)} pairs (max {max(ratios):.2f}x)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
