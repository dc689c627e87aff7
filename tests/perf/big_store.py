"""Build a chat history the size of a year of use, through the store's own API, and time what the window does.

    python -m tests.perf.big_store DEST [--chats 3000] [--messages 50]    # build DEST/chats.db (once; minutes)
    python -m tests.perf.big_store DEST --measure                          # time open, list, search, open chat

Every assistant reply carries about 300 tokens of provenance, as real replies do. Building turns off SQLite's
per-commit sync on its own connection only (the data is throwaway); measuring opens the file as the app does.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from pathlib import Path

from app.engine.events import GenerationStats
from app.store import ChatStore

WORDS = (
    "function",
    "parser",
    "thread",
    "cache",
    "request",
    "retry",
    "value",
    "error",
    "list",
    "token",
    "model",
    "draft",
    "context",
    "window",
    "query",
    "index",
    "file",
    "stream",
    "test",
    "build",
    "Straße",
    "naïve",
)


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def build(path: Path, chats: int, messages: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with ChatStore(path) as store:
        store._conn.execute("PRAGMA synchronous = OFF")  # throwaway data: no fsync per commit while building
        for c in range(chats):
            chat = store.create_chat(f"Chat {c}: {_text(rng, 3)}")
            for _ in range(messages // 2):
                store.add_message(chat.id, "user", _text(rng, 40))
                tokens = [(word + " ", rng.choice(("target", "draft"))) for word in _text(rng, 300).split(" ")]
                store.add_message(
                    chat.id,
                    "assistant",
                    "".join(t for t, _ in tokens),
                    tokens=tokens,
                    stats=GenerationStats(tokens=300, tokens_per_second=20.0, drafted=100, accepted=80),
                )
            if c % 100 == 0:
                print(f"{c}/{chats} chats", flush=True)


def _timed(fn, repeats: int = 5) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def measure(path: Path) -> None:
    from app.store.db import find_damage

    check_s, _ = _timed(lambda: find_damage(path), repeats=1)
    open_s, store = _timed(lambda: ChatStore(path, check_pages=False), repeats=1)
    try:
        list_s, chats = _timed(store.list_chats)
        search_s, found = _timed(lambda: store.list_chats("retry thread"))
        rare_s, _ = _timed(lambda: store.list_chats("lighthouse"))
        short_s, _ = _timed(lambda: store.list_chats("zz"), repeats=1)
        biggest = max(chats[:50], key=lambda chat: len(store.messages(chat.id)))
        open_chat_s, shown = _timed(lambda: store.messages(biggest.id))
        size_mb = path.stat().st_size / 1e6
        print(
            f"{len(chats)} chats, {size_mb:.0f} MB: open {open_s * 1000:.0f} ms (page check for damage, on a "
            f"thread after the window shows: {check_s * 1000:.0f} ms), list {list_s * 1000:.0f} ms, search for a "
            f"word in no message {rare_s * 1000:.0f} ms, for words in every chat {search_s * 1000:.0f} ms "
            f"({len(found)} chats), 2-character search {short_s * 1000:.0f} ms, read a {len(shown)}-message chat "
            f"{open_chat_s * 1000:.0f} ms"
        )
    finally:
        store.close()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.perf.big_store")
    parser.add_argument("dest", type=Path)
    parser.add_argument("--chats", type=int, default=3000)
    parser.add_argument("--messages", type=int, default=50)
    parser.add_argument("--measure", action="store_true")
    args = parser.parse_args(argv)
    path = args.dest / "chats.db"
    if args.measure:
        measure(path)
    else:
        args.dest.mkdir(parents=True, exist_ok=True)
        build(path, args.chats, args.messages)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
