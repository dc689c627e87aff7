"""The share of each prompt read from the KV cache over a 10-turn chat with a thinking model's template (issue 31).

    python -m tests.perf.thinking_cache_share [--turns 10] [--template qwen3.jinja ...]

A tiny synthetic model carries each real template (tests/fixtures/chat_templates). Each earlier reply goes back as
the window sends it: its answer as content, its reasoning as reasoning_content. The KV cache after a reply holds
that reply as the model wrote it, reasoning first, so a template that drops old reasoning (all of these) can reuse
the next prompt only up to the reply's start; the tiny model's own reply text stands in for it (it differs from the
stored answer, as a real reply's cache does from the answer alone). The baseline is a template without thinking
(Qwen2.5's), whose stored reply is the model's own text, so the cache reaches through the reply: today's case.
Prints, per template, the cached share of turns 2..N together, and of the last turn.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent
from app.engine.local.engine import SpecEngine
from app.testing.synthetic import write_tiny_model

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
THINKING = ("qwen3.jinja", "deepseek-r1-distill-qwen.jinja", "gpt-oss.jinja", "magistral.jinja")
BASELINE = "qwen2.5.jinja"


def question(turn: int) -> str:
    return (
        f"Question {turn}: is {221 + 2 * turn} a prime number? Say how you checked it, in a sentence or two, "
        "and name the smallest factor if it has one."
    )


def chat_share(template: str, turns: int, reply_tokens: int, folder: Path) -> tuple[float, float]:
    model = write_tiny_model(
        folder / f"{template}.gguf", extra_metadata=[("tokenizer.chat_template", (TEMPLATES / template).read_text())]
    )
    engine = SpecEngine(LoadSettings(n_ctx=8192, n_threads=1))
    engine.load_target(model)
    thinking = template != BASELINE
    messages: list[dict] = [{"role": "system", "content": "Answer briefly."}]
    cached = total = 0
    last = 0.0
    try:
        for turn in range(turns):
            messages.append({"role": "user", "content": question(turn)})
            events = list(engine.chat(messages, GenerationConfig(max_tokens=reply_tokens, seed=turn)))
            finished = events[-1]
            assert isinstance(finished, FinishedEvent)
            if turn:
                cached += finished.stats.prompt_cached
                total += finished.stats.prompt_tokens
                last = finished.stats.prompt_cached / finished.stats.prompt_tokens
            if thinking:
                reply = {
                    "role": "assistant",
                    "content": f"Answer {turn}: it is not prime; 13 divides it.",
                    "reasoning_content": f"Reasoning {turn}: try 3, 7, 11, then 13, which divides it evenly.",
                }
            else:
                reply = {"role": "assistant", "content": finished.text}
            messages.append(reply)
    finally:
        engine.close()
    return cached / total, last


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf.thinking_cache_share", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--reply-tokens", type=int, default=24)
    parser.add_argument("--template", action="append", help="template file names (default: all)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        for template in args.template or (BASELINE, *THINKING):
            share, last = chat_share(template, args.turns, args.reply_tokens, Path(folder))
            print(
                f"{template:34s} turns 2-{args.turns}: {share:6.1%} of the prompt from the cache; "
                f"turn {args.turns}: {last:6.1%}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
