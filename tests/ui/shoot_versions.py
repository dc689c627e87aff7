"""Screenshots of the version switcher in both themes, for the README: python tests/ui/shoot_versions.py OUT_DIR.
A chat with a regenerated reply is written straight into a fresh profile's store; no model is loaded."""

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


def main() -> None:
    out = Path(sys.argv[1])
    store = ChatStore()
    chat = store.create_chat()
    store.add_message(chat.id, "user", "Name a good first programming language, in one sentence.")
    first = store.add_message(chat.id, "assistant", "Python: its syntax reads like English.",
                              stats=GenerationStats(tokens=9, elapsed_s=0.4))
    store.branch_from(chat.id, first.id)
    store.add_message(chat.id, "assistant", "Python, for its readable syntax and the libraries that come with it.",
                      stats=GenerationStats(tokens=15, elapsed_s=0.6))
    save_settings(AppSettings(scan_hf_cache=False, last_chat_id=chat.id, threads=1))
    app = QApplication([])
    window = MainWindow(store=store, scan_on_start=False)
    window.resize(900, 600)
    window.show()
    for theme in ("light", "dark"):
        window.appearance.set_choice(theme)
        window.conversation.reload()
        end = time.monotonic() + 1
        while time.monotonic() < end:
            app.processEvents()
        window.chat_view.grab().save(str(out / f"branch-switcher-{theme}.png"))
    window.shutdown()


if __name__ == "__main__":
    main()
