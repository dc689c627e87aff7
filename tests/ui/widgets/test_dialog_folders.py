"""File dialogs open in a folder meant for their kind of file (never the working directory, and Export
not in the home folder's root), and then in the folder last used for that kind, across runs. (Issue 36.)"""

from __future__ import annotations

import os
from pathlib import Path

from app.ui.widgets.dialog_folders import remember_folder, start_folder


def test_each_kind_starts_somewhere_sensible_then_where_it_was_last(tmp_path, monkeypatch):
    work = tmp_path / "started-here"
    work.mkdir()
    monkeypatch.chdir(work)
    first = start_folder("export")
    assert Path(first).is_dir() and Path(first) != Path.cwd()
    chosen = tmp_path / "exports"
    chosen.mkdir()
    remember_folder("export", str(chosen / "chat.md"))
    assert start_folder("export") == str(chosen)
    assert start_folder("attach") != str(chosen)  # each kind keeps its own
    chosen.rmdir()  # a remembered folder that is gone: back to the default
    assert start_folder("export") == first


def test_the_exporter_suggests_the_remembered_folder(make_window, qtbot, fake_engine, tmp_path):
    from tests.ui.window_helpers import send_and_wait

    window = make_window(engine_factory=fake_engine)
    window.choose_target(window.library.usable_entries()[0].path)
    qtbot.waitUntil(window.models_ready, timeout=20000)
    send_and_wait(qtbot, window, "hello")
    folder = tmp_path / "my-exports"
    folder.mkdir()
    remember_folder("export", str(folder / "x.md"))
    asked: list[str] = []
    window.chat_export.ask_path = lambda suggested: (asked.append(suggested), ("", ""))[1]
    window.chat_export.export_chat()
    assert os.path.dirname(asked[0]) == str(folder)
