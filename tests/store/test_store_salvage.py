"""A database damaged inside (header and schema fine) is found out when it is opened, and moving it aside keeps
every chat that can still be read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.store import ChatStore, DatabaseCorruptError, salvage_database, set_aside_database
from app.store.salvage import RECOVERED_TITLE

PAGE = 4096


def make_history(path: Path, chats: int = 40) -> dict[str, list[str]]:
    history = {}
    with ChatStore(path) as store:
        for c in range(chats):
            chat = store.create_chat(f"chat {c}")
            history[chat.title] = [f"chat {c} message {m} " + "x" * 1200 for m in range(3)]
            for m, text in enumerate(history[chat.title]):
                store.add_message(chat.id, "user" if m % 2 == 0 else "assistant", text)
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0
    return history


def damage_middle_page(path: Path) -> None:
    """Overwrite one page of message text from the middle of the file with noise.

    Found by its text rather than its position: which table the exact middle page holds depends on the size of
    every row before it (a new settings field moves it), and this test is about losing messages.
    """
    data = bytearray(path.read_bytes())
    at = data.index(b"chat 20 message 1 ")
    middle = at // PAGE * PAGE
    data[middle : middle + PAGE] = os.urandom(PAGE)
    path.write_bytes(bytes(data))


def read_history(path: Path) -> dict[str, list[str]]:
    with ChatStore(path) as store:
        # Each chat whose row was lost comes back as its own RECOVERED_TITLE chat: keep them apart.
        return {
            chat.title if chat.title != RECOVERED_TITLE else f"{chat.title} {chat.id}": [
                m.content for m in store.messages(chat.id)
            ]
            for chat in store.list_chats()
        }


def test_damaged_pages_are_reported_when_the_store_opens(tmp_path):
    path = tmp_path / "chats.sqlite3"
    make_history(path)
    damage_middle_page(path)
    with pytest.raises(DatabaseCorruptError, match="damaged"):
        ChatStore(path)


def test_salvage_keeps_every_readable_chat(tmp_path):
    path = tmp_path / "chats.sqlite3"
    original = make_history(path)
    damage_middle_page(path)
    with pytest.raises(DatabaseCorruptError):
        ChatStore(path)
    moved = set_aside_database(path)
    report = salvage_database(moved, path)
    recovered = read_history(path)
    # One page of about forty is lost: most messages survive, each exactly as written, never garbage.
    assert report.messages >= 100
    assert sum(len(v) for v in recovered.values()) == report.messages
    original_messages = {text for texts in original.values() for text in texts}
    for title, texts in recovered.items():
        assert title in original or title.startswith(RECOVERED_TITLE)
        assert set(texts) <= original_messages
    intact = [t for t in original if recovered.get(t) == original[t]]
    assert len(intact) >= 30


def test_salvaging_an_unreadable_file_copies_nothing_and_does_not_fail(tmp_path):
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(os.urandom(3 * PAGE))
    report = salvage_database(broken, tmp_path / "fresh.sqlite3")
    assert (report.chats, report.messages) == (0, 0)
    assert read_history(tmp_path / "fresh.sqlite3") == {}


def test_choosing_start_fresh_at_launch_keeps_the_readable_chats(monkeypatch):
    from app.platform import paths
    from app.ui.shell import main as ui_main

    path = paths.database_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    original = make_history(path)
    damage_middle_page(path)
    shown = []
    monkeypatch.setattr(ui_main, "ask_about_broken_database", lambda message: shown.append(message) or True)
    store = ui_main.open_store()
    try:
        assert shown and "damaged" in shown[0]
        titles = {chat.title for chat in store.list_chats()}
        assert len(titles & set(original)) >= 30
    finally:
        store.close()
    assert list(path.parent.glob(path.name + ".broken-*"))  # the damaged file is kept beside the new one


def test_salvage_keeps_projects_their_documents_and_their_chats(tmp_path):
    broken, fresh = tmp_path / "broken.db", tmp_path / "fresh.db"
    with ChatStore(broken) as store:
        project = store.projects.create_project("Garden", instructions="Plants only.", documents=["/notes"])
        chat = store.create_chat("roses")
        store.add_message(chat.id, "user", "When?")
        store.projects.move_chat(chat.id, project.id)
        store.create_chat("loose")
    report = salvage_database(broken, fresh)
    assert report.chats == 2
    with ChatStore(fresh) as store:
        (kept,) = store.projects.list_projects()
        assert (kept.name, kept.instructions, kept.documents) == ("Garden", "Plants only.", ("/notes",))
        assert store.projects.chat_ids(kept.id) == [chat.id]
        assert [m.content for m in store.messages(chat.id)] == ["When?"]
