"""Projects in the chat database: the migration that adds them keeps every chat, and a project's chats are kept or
deleted with it as the person chooses."""

from __future__ import annotations

import sqlite3

import pytest

from app.store import ChatSettings, ChatStore, DatabaseTooNewError, StoreError
from app.store import db
from app.store.projects import with_instructions


def _version_6_database(path) -> None:
    """A database as SpecChat wrote it before projects: the first six migrations, two chats with messages."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.create_function("specchat_fold", 1, db.fold_for_search, deterministic=True)
    for step in db.MIGRATIONS[:6]:
        step(conn)
    for title in ("Old chat", "Another"):
        chat_id = conn.execute(
            "INSERT INTO chats (title, created_at, updated_at, settings) VALUES (?, 1, 1, '{}')", (title,)
        ).lastrowid
        conn.execute(
            "INSERT INTO messages (chat_id, role, content, created_at) VALUES (?, 'user', ?, 1)",
            (chat_id, f"hello from {title}"),
        )
    conn.execute("PRAGMA user_version = 6")
    conn.execute(f"PRAGMA application_id = {db.APPLICATION_ID}")
    conn.close()


def test_migration_from_version_6_keeps_every_chat(tmp_path):
    path = tmp_path / "chats.sqlite3"
    _version_6_database(path)
    with ChatStore(path) as store:
        chats = store.list_chats()
        assert sorted(c.title for c in chats) == ["Another", "Old chat"]
        assert all(c.project_id is None for c in chats)
        assert [m.content for m in store.messages(chats[0].id)] == [f"hello from {chats[0].title}"]
        assert [c.title for c in store.list_chats("hello from old")] == ["Old chat"]  # the search index kept
        project = store.projects.create_project("Work")
        store.projects.move_chat(chats[0].id, project.id)
        assert store.get_chat(chats[0].id).project_id == project.id


def test_a_too_new_database_still_refuses(tmp_path):
    path = tmp_path / "chats.sqlite3"
    ChatStore(path).close()
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {db.SCHEMA_VERSION + 1}")
    conn.close()
    before = path.read_bytes()
    with pytest.raises(DatabaseTooNewError):
        ChatStore(path)
    assert path.read_bytes() == before


def test_create_rename_list_and_settings_of_projects(tmp_path):
    with ChatStore(tmp_path / "c.sqlite3") as store:
        projects = store.projects
        work = projects.create_project("  Work   stuff ", instructions="Answer in French.", target_path="/m/a.gguf")
        home = projects.create_project("Home")
        assert [p.name for p in projects.list_projects()] == ["Work stuff", "Home"]
        assert projects.rename_project(home.id, "House").name == "House"
        with pytest.raises(StoreError, match="needs a name"):
            projects.rename_project(home.id, "   ")
        changed = projects.update_project(
            type(work)(**{**work.__dict__, "preset": "Terse", "documents": ("/docs/a.md", "/docs", "/docs/a.md")})
        )
        assert changed.preset == "Terse" and changed.documents == ("/docs/a.md", "/docs")
        assert projects.get_project(work.id).instructions == "Answer in French."


def test_delete_keeps_or_deletes_the_chats_and_move_in_and_out(tmp_path):
    with ChatStore(tmp_path / "c.sqlite3") as store:
        projects = store.projects
        keep, drop = projects.create_project("Keep"), projects.create_project("Drop")
        a = store.create_chat("a", ChatSettings())
        b = store.create_chat("b")
        store.add_message(b.id, "user", "text of b")
        projects.move_chat(a.id, keep.id)
        projects.move_chat(b.id, drop.id)
        assert projects.chat_ids(keep.id) == [a.id] and projects.project_of(b.id).name == "Drop"

        assert projects.delete_project(keep.id) == []
        assert store.get_chat(a.id).project_id is None  # kept, in no project
        assert projects.delete_project(drop.id, delete_chats=True) == [b.id]
        assert store.get_chat(b.id) is None and store.messages(b.id) == []
        assert projects.list_projects() == []

        other = projects.create_project("Other", documents=["/x"])
        projects.move_chat(a.id, other.id)
        projects.move_chat(a.id, None)
        assert store.get_chat(a.id).project_id is None
        with pytest.raises(StoreError):
            projects.move_chat(a.id, 9999)


def test_instructions_go_before_the_chats_own_prompt():
    assert with_instructions("Be brief.", "You help with the garden.") == "You help with the garden.\n\nBe brief."
    assert with_instructions("Be brief.", "  ") == "Be brief."
    assert with_instructions("", "Only this.") == "Only this."
