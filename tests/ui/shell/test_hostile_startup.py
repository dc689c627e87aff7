"""Start-up never ends in a traceback (issue 23, class 11). A data folder that cannot be written gets a dialog
(quit, or open read-only) and any settings file gets defaults with a warning; each checked on the real window."""

from __future__ import annotations

import json

import pytest

from app.platform import paths
from app.store import ChatStore
from app.ui.shell import main as ui_main


def _window(qtbot, store=None):
    from app.ui.shell.main_window import MainWindow

    window = MainWindow(store=store)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitUntil(window.library_ready, timeout=10000)  # the model folders it names were scanned
    return window


JUNK_SETTINGS = {
    "deeply nested": "[" * 100_000 + "]" * 100_000,
    "nested object": '{"model_folders": ' + "[" * 50_000 + "]" * 50_000 + "}",
    "not JSON": "\x00\xff junk",
    "a list": "[1, 2, 3]",
    "huge number": '{"context_size": ' + "9" * 5000 + "}",
    "wrong types": json.dumps(
        {
            "threads": "many",
            "model_folders": "x",
            "servers": {"a": 1},
            "last_chat_id": 2**70,
            "context_size": -5,
            "target_gpu_layers": 1e300,
            "show_refused": "yes",
        }
    ),
    "odd paths": json.dumps(
        {
            "model_folders": ["\u0000", "/nonexistent/\udc80", ""],
            "last_target": "\u0000",
            "last_draft": "\udc80",
            "rpc_workers": [":::"],
            "servers": ["not a url"],
        }
    ),
}


@pytest.mark.parametrize("name", list(JUNK_SETTINGS))
def test_any_settings_file_opens_the_window_with_defaults_and_a_warning(qtbot, specchat_home, name):
    path = paths.settings_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(JUNK_SETTINGS[name].encode("utf-8", "surrogatepass"))
    window = _window(qtbot)
    try:
        assert window.isVisible()
        assert "settings" in window.error_banner.text().lower()
    finally:
        window.shutdown()


def _unwritable_data_folder(specchat_home):
    # A file where the data folder should be: no user (root included) can create the database there.
    (specchat_home / "data").write_text("not a folder")


def test_an_unwritable_data_folder_asks_and_quit_ends_cleanly(qtbot, specchat_home, monkeypatch):
    _unwritable_data_folder(specchat_home)
    asked: list[str] = []
    monkeypatch.setattr(ui_main, "ask_about_unwritable_store", lambda message: asked.append(message) or False)
    assert ui_main.open_store() is None
    assert str(specchat_home / "data") in asked[0]


def test_an_unwritable_data_folder_can_be_opened_read_only(qtbot, specchat_home, monkeypatch, tmp_path):
    # Chats written earlier, then the folder turned unwritable: they are readable in a copy, never written.
    data = tmp_path / "elsewhere"
    with ChatStore(data / "chats.sqlite3") as store:
        chat = store.create_chat("Kept chat")
        store.add_message(chat.id, "user", "an old question")
    original = (data / "chats.sqlite3").read_bytes()
    monkeypatch.setattr(paths, "database_path", lambda: data / "chats.sqlite3")
    from app.store import db as store_db

    real_open = store_db.open_database

    def refuse_the_original(path, check_pages=True):
        if path == data / "chats.sqlite3":
            from app.store import StoreError

            raise StoreError(f"The chat database {path} could not be used: attempt to write a readonly database.")
        return real_open(path, check_pages)

    monkeypatch.setattr(store_db, "open_database", refuse_the_original)  # what the chat store opens with
    monkeypatch.setattr(ui_main, "ask_about_unwritable_store", lambda message: True)
    store = ui_main.open_store()
    assert store.copy_of == data / "chats.sqlite3"
    window = _window(qtbot, store)
    try:
        window.show_error(ui_main.read_only_notice(store))
        assert "Read-only" in window.error_banner.text()
        assert [window.chat_list.chat_at(r).title for r in range(window.chat_list.rowCount())] == ["Kept chat"]
        store.add_message(chat.id, "user", "written to the copy only")
    finally:
        window.shutdown()
    assert (data / "chats.sqlite3").read_bytes() == original
