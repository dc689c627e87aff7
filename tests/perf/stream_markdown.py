"""What showing a streaming reply costs the window's thread, flush by flush: `PYTHONPATH=CHECKOUT python
tests/perf/stream_markdown.py` times CHECKOUT's transcript (run it once with this checkout and once with another,
such as the main branch before streaming Markdown, to compare). Each reply is streamed into a shown ChatView in
flushes of 8 word-sized tokens, each flush followed by the events it queues (its paint); the finish is timed
apart. Offscreen Qt, no model."""

from __future__ import annotations

import inspect
import os
import re
import statistics
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.engine.events import GenerationStats  # noqa: E402
from app.ui.transcript.chat_view import ChatView, TranscriptMessage  # noqa: E402

CODE_LINE = "    total = total + values[index] * weights[index]  # one more term\n"
REPLIES = {
    "code reply, 6 KB": (
        "Here is the loop:\n\n```python\ndef weighted(values, weights):\n    total = 0\n"
        + CODE_LINE * 80
        + "    return total\n```\n\nIt adds **each term** once.\n\n"
        + "- one point\n- another point\n\n"
        + "A closing paragraph of plain words. " * 20
    ),
    "one paragraph, 12 KB": "A long paragraph that never ends, with *some* emphasis. " * 220,
    "prose and lists, 8 KB": (
        "## A heading\n\nA paragraph of words, with `code` and a [link](https://x.org).\n\n1. first\n2. second\n\n"
    )
    * 60,
}
REPEATS = 3


def _stream(app: QApplication, text: str) -> tuple[list[float], float]:
    pieces = re.findall(r"\s*\S+|\s+", text)
    view = ChatView()
    view.resize(800, 900)
    view.show()
    takes_records = "token_rounds" not in inspect.signature(view.append_tokens).parameters
    if takes_records:
        from app.store.provenance import token_records

        tokens = token_records([(p, "draft" if n % 3 else "target") for n, p in enumerate(pieces)])
    else:
        tokens = [(p, "draft" if n % 3 else "target") for n, p in enumerate(pieces)]
    view.begin_stream("model")
    flushes = []
    for n in range(0, len(tokens), 8):
        start = time.perf_counter()
        view.append_tokens(tokens[n : n + 8])
        app.processEvents()
        flushes.append(time.perf_counter() - start)
    start = time.perf_counter()
    view.finish_stream(TranscriptMessage(2, "assistant", text, tokens, GenerationStats(tokens=len(tokens))))
    app.processEvents()
    finish = time.perf_counter() - start
    view.close()
    view.deleteLater()
    app.processEvents()
    return flushes, finish


def main() -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    print(f"checkout: {os.environ.get('PYTHONPATH', '.')}")
    for name, text in REPLIES.items():
        runs = [_stream(app, text) for _ in range(REPEATS)]
        flushes, finish = min(runs, key=lambda run: sum(run[0]))
        print(
            f"{name}: {len(flushes)} flushes, total {sum(flushes) * 1000:.0f} ms, median "
            f"{statistics.median(flushes) * 1000:.1f} ms, longest {max(flushes) * 1000:.1f} ms; "
            f"finish {finish * 1000:.1f} ms"
        )


if __name__ == "__main__":
    main()
