"""The chat database's schema, one step per version: MIGRATIONS[n] takes a database from version n to n + 1.

Append only; never edit a released step (a user's database went through it). app.store.db runs them.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable


def _migrate_0_to_1(conn: sqlite3.Connection) -> None:
    # AUTOINCREMENT so ids are never reused: a late result stamped with a deleted message's id must not land on a
    # newer message. Message order within a chat is id order for the same reason.
    conn.execute(
        """
        CREATE TABLE chats (
            id          INTEGER PRIMARY KEY AUTOINCREMENT,
            title       TEXT    NOT NULL,
            created_at  REAL    NOT NULL,  -- Unix seconds
            updated_at  REAL    NOT NULL,  -- Unix seconds; the chat list is ordered by it
            settings    TEXT    NOT NULL   -- ChatSettings as a JSON object
        )
        """
    )
    conn.execute("CREATE INDEX chats_by_updated ON chats (updated_at DESC, id DESC)")
    conn.execute(
        """
        CREATE TABLE messages (
            id           INTEGER PRIMARY KEY AUTOINCREMENT,
            chat_id      INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
            role         TEXT    NOT NULL CHECK (role IN ('system', 'user', 'assistant')),
            content      TEXT    NOT NULL,
            created_at   REAL    NOT NULL,
            stats        TEXT,   -- GenerationStats.to_dict() as JSON, assistant replies only
            tokens       TEXT,   -- per-token provenance, one compact JSON document (see app.store.chats)
            target_name  TEXT,
            draft_name   TEXT
        )
        """
    )
    conn.execute("CREATE INDEX messages_by_chat ON messages (chat_id, id)")


# The search index holds each message's first SEARCH_INDEX_CHARS characters. Indexing is most of the cost of
# saving a long reply, on the window's thread (a 2 MB reply: 0.3 s indexed whole, 0.1 s so; docs/performance.md),
# and a chat is found by far less of its text than that.
SEARCH_INDEX_CHARS = 65_536


def fold_for_search(text: str | None) -> str:
    """Search is case-insensitive the way Python's casefold is ("STRASSE" finds "Straße"), beyond SQLite's ASCII."""
    return text[:SEARCH_INDEX_CHARS].casefold() if text else ""


def _migrate_1_to_2(conn: sqlite3.Connection) -> None:
    # Full-text search over the messages, kept in step by triggers so every writer (salvage included) keeps it.
    # The trigram tokenizer finds any substring of three characters or more; the text is stored casefolded.
    conn.execute("CREATE VIRTUAL TABLE message_search USING fts5(folded, tokenize = 'trigram')")
    conn.execute(
        "CREATE TRIGGER message_search_insert AFTER INSERT ON messages BEGIN "
        "INSERT INTO message_search (rowid, folded) VALUES (new.id, specchat_fold(new.content)); END"
    )
    conn.execute(
        "CREATE TRIGGER message_search_update AFTER UPDATE OF content ON messages BEGIN "
        "DELETE FROM message_search WHERE rowid = old.id; "
        "INSERT INTO message_search (rowid, folded) VALUES (new.id, specchat_fold(new.content)); END"
    )
    conn.execute(
        "CREATE TRIGGER message_search_delete AFTER DELETE ON messages BEGIN "
        "DELETE FROM message_search WHERE rowid = old.id; END"
    )
    conn.execute("INSERT INTO message_search (rowid, folded) SELECT id, specchat_fold(content) FROM messages")


def _migrate_2_to_3(conn: sqlite3.Connection) -> None:
    # Files attached to a user message, as JSON [{"name", "content"}] (app.store.attachments); NULL for none. A
    # column of the message rather than a table: they are read and deleted with it, never on their own.
    conn.execute("ALTER TABLE messages ADD COLUMN attachments TEXT")


def _migrate_3_to_4(conn: sqlite3.Connection) -> None:
    # A thinking model's reasoning, kept apart from the answer (`content`), and its per-token provenance in the
    # same compact document as `tokens` (app.store.provenance_doc; its round indices point into that document's
    # rounds). NULL for none: every message written before, and every reply of a model that does not think.
    conn.execute("ALTER TABLE messages ADD COLUMN reasoning TEXT")
    conn.execute("ALTER TABLE messages ADD COLUMN reasoning_tokens TEXT")
    # Searched only when asked ("Include thinking"), so an index of its own: answers stay found by the one
    # above, and a reply that does not think costs nothing here. A reply is saved many times while it streams and
    # its reasoning stops changing once the answer starts, so the update trigger reindexes only when it changed.
    conn.execute("CREATE VIRTUAL TABLE reasoning_search USING fts5(folded, tokenize = 'trigram')")
    conn.execute(
        "CREATE TRIGGER reasoning_search_insert AFTER INSERT ON messages "
        "WHEN new.reasoning IS NOT NULL AND new.reasoning != '' BEGIN "
        "INSERT INTO reasoning_search (rowid, folded) VALUES (new.id, specchat_fold(new.reasoning)); END"
    )
    conn.execute(
        "CREATE TRIGGER reasoning_search_update AFTER UPDATE OF reasoning ON messages "
        "WHEN old.reasoning IS NOT new.reasoning BEGIN "
        "DELETE FROM reasoning_search WHERE rowid = old.id; "
        "INSERT INTO reasoning_search (rowid, folded) SELECT new.id, specchat_fold(new.reasoning) "
        "WHERE new.reasoning IS NOT NULL AND new.reasoning != ''; END"
    )
    conn.execute(
        "CREATE TRIGGER reasoning_search_delete AFTER DELETE ON messages WHEN old.reasoning IS NOT NULL BEGIN "
        "DELETE FROM reasoning_search WHERE rowid = old.id; END"
    )


def _migrate_4_to_5(conn: sqlite3.Connection) -> None:
    # The versions of a chat that are not its current branch (app.store.branches): the messages table keeps holding
    # the current branch alone, so loading a chat, searching it and building a prompt read it as before. A row is
    # the whole message as JSON (every column, those added later included), kept under the message before the fork.
    conn.execute(
        """
        CREATE TABLE IF NOT EXISTS branch_messages (
            id          INTEGER PRIMARY KEY,  -- the message's own id, kept, so it comes back in its place
            chat_id     INTEGER NOT NULL REFERENCES chats (id) ON DELETE CASCADE,
            fork_after  INTEGER NOT NULL,     -- the id of the message before the fork (0: the chat's start)
            tail_start  INTEGER NOT NULL,     -- the id of the version's first message: which version it is
            row         TEXT    NOT NULL      -- the message's columns as a JSON object
        )
        """
    )
    conn.execute(
        "CREATE INDEX IF NOT EXISTS branch_messages_by_fork ON branch_messages (chat_id, fork_after, tail_start, id)"
    )


def _migrate_5_to_6(conn: sqlite3.Connection) -> None:
    # A reply's tool calls and their results, as JSON (app.store.tool_calls); NULL for a reply that called nothing.
    conn.execute("ALTER TABLE messages ADD COLUMN tool_calls TEXT")


def _migrate_6_to_7(conn: sqlite3.Connection) -> None:
    # Projects: folders of chats sharing instructions (added to each chat's system prompt), a default model, draft
    # and preset (app.store.projects). A chat belongs to at most one; deleting a project keeps its chats unless the
    # person asks otherwise, so the key falls back to NULL (no project) rather than cascading.
    conn.execute(
        """
        CREATE TABLE projects (
            id            INTEGER PRIMARY KEY AUTOINCREMENT,
            name          TEXT    NOT NULL,
            instructions  TEXT    NOT NULL DEFAULT '',
            target_path   TEXT,             -- a new chat's model (a target key), NULL: the one in use
            draft_path    TEXT,             -- a new chat's draft picker key, NULL: the one in use
            preset        TEXT,             -- a new chat's preset by name, NULL: none
            created_at    REAL    NOT NULL,
            updated_at    REAL    NOT NULL,
            position      INTEGER NOT NULL  -- the order of the chat list's project headers
        )
        """
    )
    conn.execute("ALTER TABLE chats ADD COLUMN project_id INTEGER REFERENCES projects (id) ON DELETE SET NULL")
    conn.execute("CREATE INDEX chats_by_project ON chats (project_id)")
    # The project's documents, as paths of files or folders; what is read from them is the document index's.
    conn.execute(
        """
        CREATE TABLE project_documents (
            project_id  INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
            path        TEXT    NOT NULL,
            added_at    REAL    NOT NULL,
            PRIMARY KEY (project_id, path)
        )
        """
    )


def _migrate_7_to_8(conn: sqlite3.Connection) -> None:
    # The sources a question was sent with, as JSON (app.store.projects.sources); NULL for a message sent without
    # documents.
    conn.execute("ALTER TABLE messages ADD COLUMN sources TEXT")


# MIGRATIONS[n] takes a database from schema version n to n + 1. Append only; never edit a released step.
MIGRATIONS: list[Callable[[sqlite3.Connection], None]] = [
    _migrate_0_to_1,
    _migrate_1_to_2,
    _migrate_2_to_3,
    _migrate_3_to_4,
    _migrate_4_to_5,
    _migrate_5_to_6,
    _migrate_6_to_7,
    _migrate_7_to_8,
]
SCHEMA_VERSION = len(MIGRATIONS)
