"""How long the window's thread is ever busy while a huge or pathological reply streams in and is shown.

    python -m tests.perf.hostile_layout

Part 1 runs the real window (offscreen) with the scripted engine (tests/ui/fake_engine.py) and, for each reply,
prints the longest gap of a 5 ms timer from Enter to the reply shown, the number of gaps over 50 ms, and what the
window was doing at the longest one. Part 2 renders each reply into a bare transcript twice in the same run, with
the plain-text fallback and with Markdown forced, and prints the ratio (Markdown is skipped past 100 KB, where it
takes minutes).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

REPLIES = {
    "2 MB, 1,000 tokens": ("x" * 1999 + " ") * 1000,
    "2 MB, one character": "x" * 2_000_000,
    "300 KB, one line": "word" * 75_000,
    "*a*a*a... 200 KB": "*a" * 100_000,
    "*a*a*a... 40 KB": "*a" * 20_000,
    "markdown 30 KB": ("Some **bold** and `code`, a [link](https://example.com) and plain words.\n\n" * 400)[:30_000],
}


def _window_stalls(app, window, fake, probe) -> None:
    from app.ui.widgets import automation

    for name, reply in REPLIES.items():
        fake.reply = reply
        state = {"phase": "sending"}

        def on_busy(busy: bool, state: dict = state) -> None:
            state.update(phase="streaming" if busy else "shown")

        window.conversation.sig_busy_changed.connect(on_busy)
        probe.start(lambda state=state: state["phase"])
        began = time.perf_counter()
        automation.send_and_wait(window, f"please write {name}", timeout_s=300)
        end = time.perf_counter() + 0.2
        while time.perf_counter() < end:
            app.processEvents()
        probe.stop()
        window.conversation.sig_busy_changed.disconnect()
        print(
            f"{name:22s} longest stall {probe.longest_ms:7.1f} ms ({probe.longest_phase}), "
            f"{probe.over_threshold} over 50 ms, shown after {time.perf_counter() - began:5.1f} s",
            flush=True,
        )


def _render_ratio(app) -> None:
    from unittest import mock

    from app.store.provenance import TokenRecord
    from app.ui.transcript import long_text
    from app.ui.transcript.chat_view import ChatView, TranscriptMessage

    def render(text: str) -> float:
        view = ChatView()
        view.resize(900, 700)
        view.show()
        app.processEvents()
        began = time.perf_counter()
        view.add_message(TranscriptMessage(1, "assistant", text, [TokenRecord(text)]), is_last_reply=True)
        app.processEvents()
        spent = time.perf_counter() - began
        view.close()
        view.deleteLater()
        app.processEvents()
        return spent

    for name, reply in REPLIES.items():
        fallback = render(reply)
        if len(reply) > 100_000:
            print(f"{name:22s} shown in {fallback * 1000:7.1f} ms (Markdown: not run, minutes)", flush=True)
            continue
        with mock.patch.object(long_text, "is_too_long", lambda text: False):
            markdown = render(reply)
        print(
            f"{name:22s} shown in {fallback * 1000:7.1f} ms; with Markdown forced {markdown * 1000:8.1f} ms "
            f"({markdown / fallback:5.1f}x)",
            flush=True,
        )


def main() -> int:
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp(prefix="specchat-hostile-layout-")
    os.environ.setdefault("SPECCHAT_THREADS", "1")
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the checkout, for the scripted engine
    from tests.ui.fake_engine import FakeEngineControl
    from PySide6.QtWidgets import QApplication

    from app.store import AppSettings, save_settings
    from app.testing.synthetic import make_model_set
    from app.ui.devtools.bench_modes import StallProbe
    from app.ui.models.library_model import NGRAM_KEY
    from app.ui.shell.main_window import MainWindow
    from app.ui.widgets import automation

    models = make_model_set(Path(tempfile.mkdtemp(prefix="specchat-hostile-layout-models-")))
    save_settings(AppSettings(model_folders=[str(models.target.parent)], scan_hf_cache=False, threads=1))
    app = QApplication(sys.argv[:1])
    fake = FakeEngineControl(Path(tempfile.mkdtemp(prefix="specchat-hostile-layout-engine-")))
    window = MainWindow(engine_factory=fake)
    window.show()
    automation.choose_pair(window, str(models.target), NGRAM_KEY, timeout_s=120)
    window.update_chat_settings(max_tokens=100_000)
    print("In the window (Enter to reply shown):")
    _window_stalls(app, window, fake, StallProbe())
    window.close()
    print("Rendering one finished reply:")
    _render_ratio(app)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
