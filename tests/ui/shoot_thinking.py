"""Screenshots of a reply's Thinking section, folded and open, in both themes, for the user guide:
python tests/ui/shoot_thinking.py OUT_DIR. A chat with a thinking reply is written straight into a fresh profile's
store; no model is loaded."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp()
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.engine.events import GenerationStats  # noqa: E402
from app.store import AppSettings, ChatStore, save_settings  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402

REASONING = "221 is odd, so 2 does not divide it. 2+2+1 = 5, so 3 does not. Try 13: 13 x 17 = 221. So it has factors."
ANSWER = "No. **221 = 13 × 17**, so it is not prime."


def _tokens(text: str, origin_of) -> list[tuple[str, str]]:
    words = text.replace(" ", " \x00").split("\x00")
    return [(word, origin_of(n)) for n, word in enumerate(words)]


def main() -> None:
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    store = ChatStore()
    chat = store.create_chat()
    store.add_message(chat.id, "user", "Is 221 a prime number?")
    thinking = _tokens(REASONING, lambda n: "draft" if n % 3 else "target")
    answer = _tokens(ANSWER, lambda n: "ngram" if n % 2 else "target")
    stats = GenerationStats(
        tokens=len(thinking) + len(answer),
        elapsed_s=3.0,
        tokens_per_second=20.0,
        drafted=30,
        accepted=20,
        acceptance_rate=20 / 30,
        reasoning_tokens=len(thinking),
        reasoning_drafted=20,
        reasoning_accepted=16,
        reasoning_s=2.4,
    )
    store.add_message(
        chat.id, "assistant", ANSWER, stats=stats, tokens=answer, reasoning=REASONING, reasoning_tokens=thinking
    )
    save_settings(AppSettings(scan_hf_cache=False, last_chat_id=chat.id, threads=1))
    app = QApplication([])
    window = MainWindow(store=store, scan_on_start=False)
    window.resize(900, 600)
    window.show()
    for theme in ("light", "dark"):
        window.appearance.set_choice(theme)
        for keep_open in (False, True):
            window.chat_view.set_keep_thinking_open(keep_open)
            window.conversation.reload()
            end = time.monotonic() + 1
            while time.monotonic() < end:
                app.processEvents()
            window.chat_view.grab().save(str(out / f"thinking-{'open' if keep_open else 'folded'}-{theme}.png"))
    window.shutdown()


if __name__ == "__main__":
    main()
