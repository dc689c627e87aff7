"""Finding chats: the chat list's search over titles, answers and (when asked) thinking, on the full-text indexes
the migrations in db.py keep, and the connection the chat store reads through."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from app.store.db import open_database


# The full-text index answers searches of at least this many characters (its trigram tokenizer's unit).
SEARCH_INDEX_MIN_CHARS = 3


def contains_folded(haystack: str | None, folded_needle: str) -> bool:
    # Python's casefold rather than SQL LIKE, whose case-insensitivity stops at ASCII ("Ärger" vs "ärger").
    return haystack is not None and folded_needle in haystack.casefold()


def open_for_chats(path: Path, check_pages: bool = True) -> sqlite3.Connection:
    """The database as the chat store reads it (open_database's checks): rows by column name, and the search's
    case folding registered as `specchat_contains`."""
    conn = open_database(path, check_pages)
    conn.row_factory = sqlite3.Row
    conn.create_function("specchat_contains", 2, contains_folded, deterministic=True)
    return conn


def chat_rows_matching(conn: sqlite3.Connection, search: str, include_reasoning: bool) -> list[sqlite3.Row]:
    """The chats' rows, most recently updated first; `search` keeps those whose title or any message contains it
    (the full-text index where it can answer), in its answer or, with `include_reasoning`, in its thinking too.
    `conn` is open_for_chats'."""
    needle = search.strip().casefold()
    if not needle:
        rows = conn.execute("SELECT * FROM chats ORDER BY updated_at DESC, id DESC").fetchall()
    elif len(needle) >= SEARCH_INDEX_MIN_CHARS:
        in_reasoning = (
            (
                "OR c.id IN (SELECT m.chat_id FROM reasoning_search AS r JOIN messages AS m "
                "ON m.id = r.rowid WHERE reasoning_search MATCH :phrase)"
            )
            if include_reasoning
            else ""
        )
        rows = conn.execute(
            f"""
            SELECT * FROM chats AS c
            WHERE specchat_contains(c.title, :needle)
               OR c.id IN (SELECT m.chat_id FROM message_search AS s JOIN messages AS m ON m.id = s.rowid
                           WHERE message_search MATCH :phrase)
               {in_reasoning}
            ORDER BY c.updated_at DESC, c.id DESC
            """,
            {"needle": needle, "phrase": '"' + needle.replace('"', '""') + '"'},
        ).fetchall()
    else:  # shorter than a trigram: the index cannot answer, so every message is read
        in_reasoning = "OR specchat_contains(m.reasoning, :needle)" if include_reasoning else ""
        rows = conn.execute(
            f"""
            SELECT * FROM chats AS c
            WHERE specchat_contains(c.title, :needle)
               OR EXISTS (SELECT 1 FROM messages AS m
                          WHERE m.chat_id = c.id AND (specchat_contains(m.content, :needle) {in_reasoning}))
            ORDER BY c.updated_at DESC, c.id DESC
            """,
            {"needle": needle},
        ).fetchall()
    return rows
