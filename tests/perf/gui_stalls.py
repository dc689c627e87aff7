"""How long the window's thread is busy for each thing a person does, with a year of chats.

    python -m tests.perf.big_store DEST                 # once: about 3,000 chats x 50 messages
    python -m tests.perf.gui_stalls DEST                # start-up, search, rename, delete, open, highlight, send

Runs the real window (offscreen) on DEST/chats.db with the built-in tiny models, adds one 1,000-message chat if
DEST has none, and reports for each action the longest stall of the GUI thread seen by a 10 ms timer (for
actions that run in one call, the call's own duration, which is the stall it causes).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path


def _thousand_message_chat(store) -> int:
    for chat in store.list_chats("thousand messages"):
        return chat.id
    chat = store.create_chat("thousand messages")
    for i in range(500):
        store.add_message(chat.id, "user", f"question {i}")
        store.add_message(chat.id, "assistant", f"answer {i} " * 40, tokens=[(f"answer {i} " * 40, "draft")])
    return chat.id


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.perf.gui_stalls")
    parser.add_argument("dest", type=Path)
    args = parser.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp(prefix="specchat-stalls-")
    os.environ.setdefault("SPECCHAT_THREADS", "1")
    from PySide6.QtWidgets import QApplication

    from app.store import AppSettings, ChatStore, save_settings
    from app.testing.synthetic import make_model_set
    from app.ui.widgets import automation
    from app.ui.devtools.bench_modes import StallProbe
    from app.ui.models.library_model import NGRAM_KEY
    from app.ui.shell.main_window import MainWindow
    from app.ui.widgets.style import apply_style

    models = make_model_set(Path(tempfile.mkdtemp(prefix="specchat-stalls-models-")))
    save_settings(AppSettings(model_folders=[str(models.target.parent)], scan_hf_cache=False))
    db = args.dest / "chats.db"
    with ChatStore(db, check_pages=False) as store:
        thousand = _thousand_message_chat(store)
    app = QApplication(sys.argv[:1])
    apply_style(app)
    results: list[tuple[str, float]] = []

    started = time.perf_counter()
    window = MainWindow(store=ChatStore(db, check_pages=False))
    window.show()
    app.processEvents()  # the first paint
    results.append(("start-up to first paint", time.perf_counter() - started))
    probe = StallProbe(interval_ms=10)

    def timed(name: str, action) -> None:
        began = time.perf_counter()
        action()
        results.append((name, time.perf_counter() - began))
        app.processEvents()

    timed("open a 1,000-message chat (newest shown)", lambda: window.open_chat(thousand))
    timed("toggle highlighting off", lambda: window.set_highlighting(False))
    timed("toggle highlighting on", lambda: window.set_highlighting(True))

    def searched(name: str, query: str) -> None:
        listed: list[int] = []
        window.chat_lists.sig_listed.connect(lambda: listed.append(1))
        probe.start()
        window.chat_lists.search(query)  # what the search box does once typing pauses
        automation.wait_until(lambda: bool(listed), 60, "the search result")
        probe.stop()
        window.chat_lists.sig_listed.disconnect()
        results.append((name, probe.longest_ms / 1000))

    searched("search, a word in no message (longest stall)", "lighthouse")
    searched("search, a word in many messages (longest stall)", "retry")
    searched("clear the search (longest stall)", "")
    other = window.chat_list.chat_at(5).id
    timed("rename a chat", lambda: window.rename_chat(other, "renamed chat"))
    window.confirm = lambda *a: True
    timed("delete a chat", lambda: window.delete_chat(other))
    automation.choose_pair(window, str(models.target), NGRAM_KEY, timeout_s=120)
    probe.start()
    automation.send_and_wait(window, "hello in a long history", timeout_s=120)
    probe.stop()
    results.append(("send and finish a reply (longest stall)", probe.longest_ms / 1000))
    window.close()
    for name, seconds in results:
        print(f"{name:45s} {seconds * 1000:8.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
