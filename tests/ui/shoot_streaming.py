"""Screenshots of a reply streaming a code block, caught mid-stream, in both themes, for the user guide:
python tests/ui/shoot_streaming.py OUT_DIR. The question is written straight into a fresh profile's store and the
reply's tokens are streamed into the transcript as the window streams them; no model is loaded."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp()
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.store import AppSettings, ChatStore, save_settings  # noqa: E402
from app.store.provenance import TokenRecord  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402

QUESTION = "Write a function that returns the n-th Fibonacci number, with a docstring."
REPLY = '''Here is an iterative version, which runs in linear time and constant memory:

```python
def fibonacci(n: int) -> int:
    """The n-th Fibonacci number (fibonacci(0) == 0)."""
    if n < 0:
        raise ValueError("n must not be negative")
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a
```

It keeps only the last two numbers, so **memory stays constant** however large `n` is.
'''
SHOWN_UP_TO = "        a, b = b, a"  # where the stream is caught: inside the code block, mid-line


def settle(app: QApplication, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()


def tokens(text: str) -> list[TokenRecord]:
    """Word-sized tokens, most of the code drafted and kept (as a draft model does on code), the prose written."""
    pieces = re.findall(r"\s*\S+|\s+", text)
    in_code = False
    records = []
    for n, piece in enumerate(pieces):
        if piece.strip().startswith("```"):
            in_code = not in_code
        drafted = n % 5 not in (0, 3) if in_code else n % 4 == 1
        records.append(TokenRecord(piece, "draft" if drafted else "target", n // 3))
    return records


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    store = ChatStore()
    chat = store.create_chat()
    store.add_message(chat.id, "user", QUESTION)
    save_settings(AppSettings(scan_hf_cache=False, last_chat_id=chat.id, threads=1))
    app = QApplication([])
    window = MainWindow(store=store, scan_on_start=False)
    window.resize(900, 640)
    window.show()
    shown = REPLY[: REPLY.index(SHOWN_UP_TO) + len(SHOWN_UP_TO)]
    streamed = tokens(shown)
    for theme in ("light", "dark"):
        window.appearance.set_choice(theme)
        window.conversation.reload()
        view = window.chat_view
        view.begin_stream("Qwen2.5-Coder 1.5B  +  Qwen2.5-Coder 0.5B")
        for n in range(0, len(streamed), 3):  # a flush every few tokens, as the window's timer does
            view.append_tokens(streamed[n : n + 3])
            app.processEvents()
        settle(app, 1)
        view.grab().save(str(out / f"streaming-code-{theme}.png"))
    window.shutdown()


if __name__ == "__main__":
    main()
