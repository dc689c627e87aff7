"""Killing SpecChat mid-reply loses nothing that was already finished.

A child process writes through ChatStore and dies with os._exit (no close, no atexit, a transaction still open),
which is what the database sees when the app is killed or crashes.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

from app.engine.events import GenerationStats
from app.store import ChatStore

REPO_ROOT = Path(__file__).resolve().parents[2]

CHILD = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from app.engine.events import GenerationStats
    from app.store import ChatStore
    from app.store.db import transaction

    store = ChatStore(Path(sys.argv[1]))
    chat_id = int(sys.argv[2])
    store.add_message(chat_id, "user", "second question")
    store.add_message(chat_id, "assistant", "finished reply",
                      tokens=[("finished", "draft"), (" reply", "target")],
                      stats=GenerationStats(tokens=2, draft_len_histogram={3: 1}))
    # The reply being generated when the app dies: written but never committed.
    conn = store._conn
    conn.execute("BEGIN IMMEDIATE")
    conn.execute("INSERT INTO messages (chat_id, role, content, created_at) VALUES (?, 'assistant', 'half', 0)",
                 (chat_id,))
    os._exit(0)
    """
)


def test_killed_writer_loses_nothing_finished(tmp_path):
    path = tmp_path / "chats.sqlite3"
    survivor = ChatStore(path)  # stays open throughout, like a second window or the CLI
    chat = survivor.create_chat("crash test")
    survivor.add_message(chat.id, "user", "first question")

    subprocess.run([sys.executable, "-c", CHILD, str(path), str(chat.id)], check=True, cwd=REPO_ROOT, timeout=60)

    expected = ["first question", "second question", "finished reply"]
    assert [m.content for m in survivor.messages(chat.id)] == expected  # seen by the connection left open

    with ChatStore(path) as reopened:  # and by a fresh start after the crash
        messages = reopened.messages(chat.id)
        assert [m.content for m in messages] == expected
        assert messages[-1].tokens == [("finished", "draft"), (" reply", "target")]
        assert messages[-1].stats == GenerationStats(tokens=2, draft_len_histogram={3: 1})
        reopened.add_message(chat.id, "user", "and life goes on")  # the dead writer's lock is gone
    survivor.close()

    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


def test_message_is_committed_when_add_message_returns(tmp_path):
    """No buffering in the store: another connection sees the message the moment add_message returns."""
    path = tmp_path / "chats.sqlite3"
    with ChatStore(path) as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "hello")
        peek = sqlite3.connect(path)
        assert peek.execute("SELECT content FROM messages").fetchall() == [("hello",)]
        peek.close()
