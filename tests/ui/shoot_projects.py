"""Screenshots of the chat list with projects, for the user guide and a look at its layout:
python tests/ui/shoot_projects.py OUT_DIR [WIDTHxHEIGHT ...]: the window at 800x600 as projects-chat-list.png,
and at each size named as projects-chat-list-WIDTHxHEIGHT.png (1366x768 is the other size to look at).
Three projects and loose chats are written straight into a fresh profile's store; no model is loaded."""

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

from app.store import AppSettings, ChatStore, save_settings  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402


def _fill(store: ChatStore) -> int:
    garden = store.projects.create_project("Garden", instructions="You answer about plants.")
    thesis = store.projects.create_project("Thesis: speculative decoding on small CPUs")
    store.projects.create_project("Empty project")
    last = 0
    for title, project in (
        ("When do roses bloom?", garden.id),
        ("Soil for tomatoes", garden.id),
        ("Related work, acceptance rates", thesis.id),
        ("A loose chat about nothing in particular", None),
        ("Write add()", None),
    ):
        chat = store.create_chat(title)
        store.add_message(chat.id, "user", title)
        if project is not None:
            store.projects.move_chat(chat.id, project)
        last = chat.id
    return last


def main() -> None:
    out = Path(sys.argv[1])
    sizes = ["800x600", *sys.argv[2:]]
    store = ChatStore()
    last = _fill(store)
    save_settings(AppSettings(scan_hf_cache=False, last_chat_id=last, threads=1))
    app = QApplication([])
    window = MainWindow(store=store, scan_on_start=False)
    window.show()
    for theme in ("dark", "light"):  # a bare QApplication is styled by the switch, which skips the current one
        window.appearance.set_choice(theme)
    for size in sizes:
        width, height = (int(n) for n in size.split("x"))
        window.resize(width, height)
        end = time.monotonic() + 1
        while time.monotonic() < end:
            app.processEvents()
        name = "projects-chat-list.png" if size == sizes[0] else f"projects-chat-list-{size}.png"
        window.grab().save(str(out / name))
    window.shutdown()


if __name__ == "__main__":
    main()
