"""Time to first token, turn by turn, in a conversation that outgrows the context (real model).

    python -m tests.perf.long_chat --target MODEL.gguf [--ctx 4096] [--turns 30] [--reply-tokens 32]

Each turn adds a user message of about 150 tokens and a reply of `--reply-tokens`, through SpecEngine exactly as the
window's engine process runs it (fit_messages per chat, then chat). Prints each turn's time to first token, how
much of the prompt was found in the KV cache, how many messages were left out, and the mean TTFT of the turns
before the first cut against the turns from it on (the ratio is what matters on a shared machine).
"""

from __future__ import annotations

import argparse
import statistics
import time

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.local.engine import SpecEngine
from app.engine.events import FinishedEvent

TOPICS = (
    "a parser for INI files",
    "retrying HTTP requests",
    "a thread-safe LRU cache",
    "reading CSV in chunks",
    "validating e-mail addresses",
    "a CLI with subcommands",
    "logging to a rotating file",
    "timing code",
)


def user_message(turn: int) -> str:
    topic = TOPICS[turn % len(TOPICS)]
    return (
        f"Question {turn}: I am writing {topic} in Python for a small internal tool. Explain the main design "
        "choices in a few sentences, mention one pitfall that people often hit, and say how you would test it. "
        "Keep the answer short, because I will ask follow-up questions about the other parts of the tool, and "
        "assume the reader knows the standard library well but has not used this approach before."
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.perf.long_chat", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--reply-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args(argv)
    load = (
        LoadSettings(n_ctx=args.ctx) if args.threads is None else LoadSettings(n_ctx=args.ctx, n_threads=args.threads)
    )
    engine = SpecEngine(load)
    engine.load_target(args.target)
    config = GenerationConfig(max_tokens=args.reply_tokens, speculative=False, session="long-chat")
    messages: list[dict] = [{"role": "system", "content": "You are a concise senior Python developer."}]
    rows = []
    try:
        for turn in range(1, args.turns + 1):
            messages.append({"role": "user", "content": user_message(turn)})
            started = time.perf_counter()
            reserve = max(16, min(config.max_tokens, engine.n_ctx // 2))
            kept, dropped = engine.fit_messages(messages, reserve, session=config.session)
            fit_s = time.perf_counter() - started
            finished = [e for e in engine.chat(kept, config) if isinstance(e, FinishedEvent)][-1]
            ttft = time.perf_counter() - started - finished.stats.elapsed_s + finished.stats.ttft_s
            messages.append({"role": "assistant", "content": finished.text})
            s = finished.stats
            rows.append((turn, ttft, s.prompt_tokens, s.prompt_cached, dropped, fit_s))
            print(
                f"turn {turn:2d}  TTFT {ttft:6.2f} s  prompt {s.prompt_tokens:5d}  cached {s.prompt_cached:5d}  "
                f"left out {dropped:3d} messages  fit {fit_s * 1000:5.1f} ms",
                flush=True,
            )
    finally:
        engine.close()
    first_cut = next((t for t, *_, dropped, _ in rows if dropped), None)
    if first_cut is None:
        print("the conversation never outgrew the context; use more --turns or a smaller --ctx")
        return 1
    before = [ttft for t, ttft, *_ in rows if first_cut - 7 <= t < first_cut]
    after = [ttft for t, ttft, *_ in rows if t >= first_cut]
    ratio = statistics.mean(after) / statistics.mean(before)
    print(
        f"first cut at turn {first_cut}; mean TTFT turns {first_cut - len(before)}-{first_cut - 1}: "
        f"{statistics.mean(before):.2f} s, turns {first_cut}-{rows[-1][0]}: {statistics.mean(after):.2f} s, "
        f"ratio {ratio:.2f} (target <= 1.5)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
