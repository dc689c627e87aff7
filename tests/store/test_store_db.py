"""Opening the database: what it sets up, and the files it must refuse without touching."""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import app.store.db as db
from app.store import (
    SCHEMA_VERSION,
    ChatStore,
    DatabaseCorruptError,
    DatabaseTooNewError,
    StoreError,
    open_database,
    set_aside_database,
)

REPO_ROOT = Path(__file__).resolve().parents[2]


def snapshot(folder: Path) -> dict[str, str]:
    """Every file in the folder with a hash of its bytes: a refusal must leave this exactly as it was."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir())}


def make_database(path: Path, messages: int = 2) -> None:
    with ChatStore(path) as store:
        chat = store.create_chat("kept")
        for i in range(messages):
            store.add_message(chat.id, "user", f"message {i}")


def test_fresh_database_settings(tmp_path):
    path = tmp_path / "sub" / "dir" / "chats.sqlite3"  # missing folders are created
    conn = open_database(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA application_id").fetchone()[0] == db.APPLICATION_ID
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_reopening_keeps_data_and_version(tmp_path):
    path = tmp_path / "chats.sqlite3"
    make_database(path)
    with ChatStore(path) as store:
        assert [c.title for c in store.list_chats()] == ["kept"]


def test_empty_file_is_initialised(tmp_path):
    path = tmp_path / "chats.sqlite3"
    path.touch()
    with ChatStore(path) as store:
        assert store.list_chats() == []


def set_user_version(path: Path, version: int) -> None:
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.close()


def test_newer_database_is_refused_and_left_byte_identical(tmp_path):
    path = tmp_path / "chats.sqlite3"
    make_database(path)
    set_user_version(path, SCHEMA_VERSION + 1)
    before = snapshot(tmp_path)
    with pytest.raises(DatabaseTooNewError) as info:
        ChatStore(path)
    message = str(info.value)
    assert str(path) in message and "newer version" in message and "Update SpecChat" in message
    assert snapshot(tmp_path) == before  # no byte changed, no -wal or -shm appeared


def test_newer_version_still_in_the_wal_is_refused(tmp_path):
    """A newer SpecChat crashed before checkpointing: the file's header is old, the WAL's is new."""
    path = tmp_path / "chats.sqlite3"
    make_database(path)
    script = textwrap.dedent(
        f"""
        import os, sqlite3
        conn = sqlite3.connect({str(path)!r}, isolation_level=None)
        conn.execute("PRAGMA wal_autocheckpoint = 0")
        conn.execute("PRAGMA user_version = {SCHEMA_VERSION + 5}")
        os._exit(0)
        """
    )
    subprocess.run([sys.executable, "-c", script], check=True, timeout=60)
    assert (tmp_path / "chats.sqlite3-wal").stat().st_size > 0
    main_before = hashlib.sha256(path.read_bytes()).hexdigest()
    with pytest.raises(DatabaseTooNewError):
        ChatStore(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == main_before  # the WAL was not checkpointed into it


def test_random_bytes_are_refused_and_left_intact(tmp_path):
    path = tmp_path / "chats.sqlite3"
    path.write_bytes(os.urandom(64 * 1024))
    before = snapshot(tmp_path)
    with pytest.raises(DatabaseCorruptError) as info:
        ChatStore(path)
    message = str(info.value)
    assert str(path) in message and "not been changed" in message and "Move or rename" in message
    assert snapshot(tmp_path) == before


def test_short_file_is_refused(tmp_path):
    path = tmp_path / "chats.sqlite3"
    path.write_bytes(b"SQLite format 3\x00" + b"\x00" * 10)
    with pytest.raises(DatabaseCorruptError):
        ChatStore(path)
    assert path.stat().st_size == 26


def test_damaged_pages_behind_a_valid_header_are_refused(tmp_path):
    path = tmp_path / "chats.sqlite3"
    make_database(path)
    data = bytearray(path.read_bytes())
    data[100:4096] = os.urandom(4096 - 100)  # the schema page, header kept
    path.write_bytes(bytes(data))
    before = snapshot(tmp_path)
    with pytest.raises(DatabaseCorruptError):
        ChatStore(path)
    assert snapshot(tmp_path)[path.name] == before[path.name]


def test_another_programs_database_is_refused(tmp_path):
    path = tmp_path / "chats.sqlite3"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.commit()
    conn.close()
    before = snapshot(tmp_path)
    with pytest.raises(DatabaseCorruptError, match="not a SpecChat"):
        ChatStore(path)
    assert snapshot(tmp_path) == before


def test_both_refusals_are_store_errors():
    assert issubclass(DatabaseTooNewError, StoreError)
    assert issubclass(DatabaseCorruptError, StoreError)


def test_set_aside_lets_a_fresh_history_start(tmp_path):
    path = tmp_path / "chats.sqlite3"
    path.write_bytes(os.urandom(8192))
    original = path.read_bytes()
    with pytest.raises(DatabaseCorruptError):
        ChatStore(path)
    kept = set_aside_database(path)
    assert kept.read_bytes() == original and not path.exists()
    with ChatStore(path) as store:
        assert store.list_chats() == []


def test_a_later_migration_runs_once_in_a_transaction(tmp_path, monkeypatch):
    path = tmp_path / "chats.sqlite3"
    make_database(path)

    def add_pinned(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE chats ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")

    monkeypatch.setattr(db, "MIGRATIONS", [*db.MIGRATIONS, add_pinned])
    monkeypatch.setattr(db, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    for _ in range(2):  # the second open finds the database current and runs nothing
        conn = open_database(path)
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
        assert conn.execute("SELECT title, pinned FROM chats").fetchall() == [("kept", 0)]
        conn.close()


def test_a_failing_migration_changes_nothing(tmp_path, monkeypatch):
    path = tmp_path / "chats.sqlite3"
    make_database(path)

    def half_done(conn: sqlite3.Connection) -> None:
        conn.execute("ALTER TABLE chats ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")
        conn.execute("DELETE FROM messages")
        raise sqlite3.OperationalError("simulated failure half way")

    monkeypatch.setattr(db, "MIGRATIONS", [*db.MIGRATIONS, half_done])
    monkeypatch.setattr(db, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match=str(path)):
        open_database(path)
    monkeypatch.undo()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM messages").fetchone()[0] == 2
    assert "pinned" not in [row[1] for row in conn.execute("PRAGMA table_info(chats)")]
    conn.close()


def test_store_package_does_not_import_qt():
    code = "import sys, app.store; assert not any(m.startswith('PySide6') for m in sys.modules)"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO_ROOT, timeout=60)
