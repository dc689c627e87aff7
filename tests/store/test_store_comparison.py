"""A reply's Compare with plain result is kept with it, and databases from before it existed still open."""

from __future__ import annotations

import sqlite3

import pytest

import app.store.db as db
from app.store import ChatStore, NotFoundError


def test_a_comparison_is_kept_with_its_reply_and_can_be_forgotten(tmp_path):
    path = tmp_path / "chats.sqlite3"
    result = {"plain_tokens_per_second": 10.5, "speculative_tokens_per_second": 14.0, "identical": True}
    with ChatStore(path) as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "hi")
        reply = store.add_message(chat.id, "assistant", "hello", stats={"tokens": 1})
        assert reply.comparison is None
        store.set_comparison(reply.id, result)
    with ChatStore(path) as store:  # reopened: still there
        assert store.get_message(reply.id).comparison == result
        assert store.messages(chat.id)[-1].comparison == result
        store.set_comparison(reply.id, None)
        assert store.get_message(reply.id).comparison is None
        with pytest.raises(NotFoundError):
            store.set_comparison(reply.id + 100, result)


def test_a_database_from_before_comparisons_opens_with_its_messages(tmp_path, monkeypatch):
    path = tmp_path / "chats.sqlite3"
    monkeypatch.setattr(db, "MIGRATIONS", db.MIGRATIONS[:2])
    monkeypatch.setattr(db, "SCHEMA_VERSION", 2)
    with ChatStore(path) as store:
        chat = store.create_chat()
        store.add_message(chat.id, "assistant", "old reply")
    monkeypatch.undo()
    with ChatStore(path) as store:
        (message,) = store.messages(chat.id)
        assert message.content == "old reply" and message.comparison is None
        store.set_comparison(message.id, {"identical": False})
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == db.SCHEMA_VERSION
    conn.close()


def test_an_unreadable_comparison_leaves_the_message_readable(tmp_path):
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        chat = store.create_chat()
        reply = store.add_message(chat.id, "assistant", "text")
    conn = sqlite3.connect(path)
    conn.execute("UPDATE messages SET comparison = '{broken' WHERE id = ?", (reply.id,))
    conn.commit()
    conn.close()
    with ChatStore(path) as store:
        message = store.get_message(reply.id)
        assert message.content == "text" and message.comparison is None
