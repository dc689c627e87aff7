"""What saving a streaming reply costs with a thinking model's reasoning: the reasoning's search index is written
again only when the reasoning changed (app/store/db.py, schema 4). `python -m tests.perf.reasoning_saves`."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Callable

from app.store import ChatStore

THINKING = "Let me think about the factors of this number carefully. " * 1200  # about 70 KB


def _best_ms(save: Callable[[int], None], runs: int = 20) -> float:
    best = float("inf")
    for i in range(runs):
        started = time.perf_counter()
        save(i)
        best = min(best, time.perf_counter() - started)
    return best * 1000


def main() -> None:
    with tempfile.TemporaryDirectory() as folder, ChatStore(Path(folder) / "chats.db") as store:
        chat = store.create_chat()
        reply = store.add_message(chat.id, "assistant", "", reasoning=THINKING[:100])
        # While it thinks, each save has more reasoning; once the answer starts, the reasoning stays as it is.
        thinking = _best_ms(lambda i: store.update_reply(reply.id, "", reasoning=THINKING[: len(THINKING) - i]))
        answering = _best_ms(lambda i: store.update_reply(reply.id, "answer " * i, reasoning=THINKING))
        plain = _best_ms(lambda i: store.update_reply(reply.id, "answer " * (i + 1)))
    print(
        f"a save with 70 KB of thinking: {thinking:.1f} ms while it grows, {answering:.1f} ms once the answer "
        f"streams; {plain:.1f} ms for a reply without thinking"
    )


if __name__ == "__main__":
    main()
