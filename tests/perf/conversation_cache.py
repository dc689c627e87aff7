"""Going back to a conversation after another (real model): how much of its prompt comes from the kept KV cache,
and how long its prompt takes against a turn that directly continues.

    python -m tests.perf.conversation_cache --target MODEL.gguf [--draft DRAFT.gguf] [--ctx 4096] [--kept 10]

Through SpecEngine as the window's engine process runs it: chat A (about 900 tokens), chat B, back to A with one
more line, then A continued directly; then the engine is closed and opened again and A is reopened (its state from
disk); then `--kept` more chats, and the process's RSS with them kept. Prompt time is measured from the request
to the first token (restoring a state included), and as the engine's own prompt_eval_s.
"""

from __future__ import annotations

import argparse
import statistics
import time

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, TokenEvent
from app.engine.local.engine import SpecEngine
from app.platform.process_memory import rss_mib

SUBJECTS = (
    "a parser for INI files",
    "retrying HTTP requests",
    "a thread-safe LRU cache",
    "reading CSV in chunks",
    "validating e-mail addresses",
    "a CLI with subcommands",
    "logging to a rotating file",
    "timing code",
    "a job queue on SQLite",
    "diffing two JSON files",
    "a rate limiter",
    "paginating an API",
)


def conversation(subject: str, turns: int = 6) -> list[dict]:
    """About 150 tokens a turn: a question and a short answer about `subject`, ending on a question."""
    messages = [{"role": "system", "content": "You are a careful Python reviewer. Answer briefly."}]
    for turn in range(turns):
        messages.append(
            {
                "role": "user",
                "content": (
                    f"Part {turn} of {subject}: explain the main design choice for this part in a few sentences, mention "
                    "one pitfall that people often hit with it, and say how you would test it. Keep it short; I will ask "
                    f"about the other parts of {subject} next, and I know the standard library well."
                ),
            }
        )
        if turn < turns - 1:
            messages.append(
                {
                    "role": "assistant",
                    "content": (
                        f"For part {turn} of {subject}, keep the state in one small class with a clear owner, validate "
                        "input at the edge, and test the edge cases first: empty input, a very large input, and input "
                        "that arrives in pieces. The usual pitfall is sharing mutable state between callers."
                    ),
                }
            )
    return messages


def turn(engine: SpecEngine, messages: list[dict], session: str, label: str, reply_tokens: int) -> dict:
    config = GenerationConfig(max_tokens=reply_tokens, session=session)
    started = time.perf_counter()
    first = None
    finished = None
    for event in engine.chat(messages, config):
        if isinstance(event, TokenEvent) and first is None:
            first = time.perf_counter()
        elif isinstance(event, FinishedEvent):
            finished = event
    assert finished is not None
    s = finished.stats
    row = {
        "label": label,
        "prompt": s.prompt_tokens,
        "cached": s.prompt_cached,
        "ttft": (first or time.perf_counter()) - started,
        "prompt_eval_s": s.prompt_eval_s,
    }
    print(
        f"{label:<28} prompt {s.prompt_tokens:5d}  from cache {s.prompt_cached:5d} "
        f"({s.prompt_cached / max(1, s.prompt_tokens):4.0%})  to first token {row['ttft']:6.2f} s  "
        f"prompt_eval {s.prompt_eval_s:6.2f} s",
        flush=True,
    )
    messages.append({"role": "assistant", "content": finished.text})
    return row


def paired_rounds(engine: SpecEngine, chats: dict[str, list[dict]], rounds: int, reply_tokens: int) -> None:
    """Each round, each chat in turn: back to it after the other, then continued directly; one sample of the
    ratio each, so that a busy moment of a shared machine moves one sample, not the verdict. The time to the first
    token splits into the prompt (restoring a state and reading the new tokens: prompt_eval_s) and the rest (the
    first round: drafting and verifying)."""
    ratios: dict[str, list[float]] = {"to first token": [], "prompt": [], "first round": []}
    for n in range(rounds):
        for session, messages in chats.items():
            messages.append({"role": "user", "content": f"Question {n}: what would you change first?"})
            back = turn(engine, messages, session, f"back to {session}", reply_tokens)
            messages.append({"role": "user", "content": f"Question {n}: and what would you leave as it is?"})
            cont = turn(engine, messages, session, f"{session} continued", reply_tokens)
            ratios["to first token"].append(back["ttft"] / cont["ttft"])
            ratios["prompt"].append(back["prompt_eval_s"] / cont["prompt_eval_s"])
            ratios["first round"].append(
                max(1e-3, back["ttft"] - back["prompt_eval_s"]) / max(1e-3, cont["ttft"] - cont["prompt_eval_s"])
            )
    for what, values in ratios.items():
        print(
            f"back / continued, {what}: median {statistics.median(values):.2f}x over {len(values)} pairs "
            f"(min {min(values):.2f}x, max {max(values):.2f}x)"
        )


def open_engine(args) -> SpecEngine:
    engine = SpecEngine(LoadSettings(n_ctx=args.ctx, n_threads=args.threads or 0))
    engine.load_target(args.target)
    if args.draft:
        engine.load_draft(args.draft)
    return engine


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.perf.conversation_cache", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--target", required=True)
    parser.add_argument("--draft", default=None)
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--reply-tokens", type=int, default=16)
    parser.add_argument("--kept", type=int, default=10, help="more chats kept, for the RSS (0: none)")
    parser.add_argument(
        "--pairs",
        type=int,
        default=0,
        help="then this many more rounds of back-to-A, A continued, back-to-B, B continued: the "
        "medians of the paired ratios, prompt and first round apart (0: none)",
    )
    args = parser.parse_args(argv)

    engine = open_engine(args)
    print(f"RSS after loading: {rss_mib():.0f} MiB", flush=True)
    a, b = conversation(SUBJECTS[0]), conversation(SUBJECTS[1])
    turn(engine, a, "chat-a", "A (first reading)", args.reply_tokens)
    turn(engine, b, "chat-b", "B (first reading)", args.reply_tokens)
    a.append({"role": "user", "content": "One more thing: how would you log it?"})
    back = turn(engine, a, "chat-a", "back to A after B", args.reply_tokens)
    a.append({"role": "user", "content": "And how would you document it?"})
    cont = turn(engine, a, "chat-a", "A continued", args.reply_tokens)
    if args.pairs:
        paired_rounds(engine, {"chat-a": a, "chat-b": b}, args.pairs, args.reply_tokens)
    engine.close()

    engine = open_engine(args)
    a.append({"role": "user", "content": "Last: what would you name it?"})
    reopened = turn(engine, a, "chat-a", "A reopened after a restart", args.reply_tokens)
    a.append({"role": "user", "content": "Thanks. Any last advice?"})
    cont2 = turn(engine, a, "chat-a", "A continued after reopening", args.reply_tokens)

    print(
        f"back to A: {back['cached'] / back['prompt']:.1%} from cache, to first token "
        f"{back['ttft'] / cont['ttft']:.2f}x a continued turn's"
    )
    print(
        f"reopened: {reopened['cached'] / reopened['prompt']:.1%} from cache, to first token "
        f"{reopened['ttft'] / cont2['ttft']:.2f}x a continued turn's"
    )

    if args.kept:
        before = rss_mib()
        for i in range(args.kept):
            chat = conversation(SUBJECTS[(i + 2) % len(SUBJECTS)] + f" (variant {i})")
            turn(engine, chat, f"chat-{i}", f"kept chat {i}", 4)
        cache = engine.conversation_cache
        assert cache is not None
        print(
            f"RSS with {cache.kept_count} conversations kept (and one in use): {rss_mib():.0f} MiB "
            f"({rss_mib() - before:+.0f} MiB); {cache.summary()}"
        )
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
