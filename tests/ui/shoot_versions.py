"""Screenshots of the version switcher and Settings > Presets in both themes, for the user guide:
python tests/ui/shoot_versions.py OUT_DIR.
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
from app.ui.settings.dialog import AppSettingsDialog  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402


def main() -> None:
    out = Path(sys.argv[1])
    store = ChatStore()
    chat = store.create_chat()
    store.add_message(chat.id, "user", "Name a good first programming language, in one sentence.")
    first = store.add_message(
        chat.id, "assistant", "Python: its syntax reads like English.", stats=GenerationStats(tokens=9, elapsed_s=0.4)
    )
    store.branch_from(chat.id, first.id)
    store.add_message(
        chat.id,
        "assistant",
        "Python, for its readable syntax and the libraries that come with it.",
        stats=GenerationStats(tokens=15, elapsed_s=0.6),
    )
    save_settings(
        AppSettings(
            scan_hf_cache=False,
            last_chat_id=chat.id,
            threads=1,
            presets=[
                {
                    "name": "Code review",
                    "system_prompt": "Review the code I paste: bugs first, then style.",
                    "temperature": 0.2,
                    "max_tokens": 2048,
                },
                {
                    "name": "Edit my file",
                    "system_prompt": "Return the whole file with the change made.",
                    "draft_ngram": True,
                    "max_tokens": 4096,
                },
            ],
        )
    )
    app = QApplication([])
    window = MainWindow(store=store, scan_on_start=False)
    window.resize(900, 600)
    window.show()
    for theme in ("dark", "light"):  # main.py styles the app light; a bare QApplication is styled by the switch
        window.appearance.set_choice(theme)
        window.conversation.reload()
        end = time.monotonic() + 1
        while time.monotonic() < end:
            app.processEvents()
        window.chat_view.grab().save(str(out / f"branch-switcher-{theme}.png"))
        dialog = AppSettingsDialog(window.settings, window, api_state="Off")
        dialog.resize(760, 560)
        dialog.pages.show_page("Presets")
        dialog.presets_page.names.setCurrentRow(1)
        dialog.show()
        end = time.monotonic() + 0.5
        while time.monotonic() < end:
            app.processEvents()
        dialog.grab().save(str(out / f"presets-page-{theme}.png"))
        dialog.close()
    window.shutdown()


if __name__ == "__main__":
    main()
