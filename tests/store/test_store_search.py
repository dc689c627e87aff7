"""Search answers from SQLite's full-text index, which stays in step with every change to the messages."""

from __future__ import annotations

import sqlite3

from app.engine.events import GenerationStats
from app.store import ChatStore
from tests.support.old_schema import take_back


def _titles(store: ChatStore, query: str) -> set[str]:
    return {chat.title for chat in store.list_chats(query)}


def test_search_follows_edits_streaming_updates_and_deletes(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        a = store.create_chat("A")
        b = store.create_chat("B")
        question = store.add_message(a.id, "user", "How do I parse TOML?")
        reply = store.add_message(b.id, "assistant", "Use tomllib")
        assert _titles(store, "toml") == {"A", "B"}
        store.update_message_content(question.id, "How do I parse YAML?")
        assert _titles(store, "toml") == {"B"} and _titles(store, "yaml") == {"A"}
        store.update_reply(reply.id, "Use tomllib, then json for the rest", stats=GenerationStats(tokens=9))
        assert _titles(store, "json for") == {"B"}
        store.delete_messages_from(b.id, reply.id)
        assert _titles(store, "tomllib") == set()
        store.delete_chat(a.id)
        assert _titles(store, "yaml") == set()
        # Nothing is left behind in the index for deleted messages.
        conn = sqlite3.connect(tmp_path / "chats.db")
        assert conn.execute("SELECT count(*) FROM message_search").fetchone()[0] == 0
        conn.close()


def test_search_uses_the_index_and_keeps_casefold_semantics(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat("Physics")
        store.add_message(chat.id, "user", "Explain the Straße of Gibraltar")
        plan = " ".join(
            row[3]
            for row in store._conn.execute(
                "EXPLAIN QUERY PLAN SELECT rowid FROM message_search WHERE message_search MATCH '\"strasse\"'"
            )
        )
        assert "VIRTUAL TABLE INDEX" in plan
        assert _titles(store, "STRASSE") == {"Physics"}
        assert _titles(store, "gibraltar") == {"Physics"}


def test_an_older_database_gets_its_index_built_when_opened(tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat("Old")
        store.add_message(chat.id, "user", "remember the lighthouse")
    take_back(path, 1)  # schema version 1, as the SpecChat before search wrote it
    with ChatStore(path) as store:
        assert _titles(store, "lighthouse") == {"Old"}
