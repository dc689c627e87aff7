"""Copying what can still be read out of a damaged chat database into a fresh one.

Used after a refused database was moved aside (set_aside_database): every chat, message and project row that SQLite
can still read is copied with its id, row by row, so one bad page costs only the rows on it. Messages whose chat row is
lost are kept too, under a chat titled RECOVERED_TITLE.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from app.store.db import open_database, transaction

RECOVERED_TITLE = "Recovered messages"
_CHAT_COLUMNS = ("id", "title", "created_at", "updated_at", "settings")
_MESSAGE_COLUMNS = ("id", "chat_id", "role", "content", "created_at", "stats", "tokens", "target_name", "draft_name")
# Columns added by later schema versions: copied when the damaged file has them.
_LATER_MESSAGE_COLUMNS = ("attachments", "reasoning", "reasoning_tokens")
# Projects (schema version 7): their instructions are the person's own writing, so they are kept like messages.
_PROJECT_COLUMNS = (
    "id",
    "name",
    "instructions",
    "target_path",
    "draft_path",
    "preset",
    "created_at",
    "updated_at",
    "position",
)
_DOCUMENT_COLUMNS = ("project_id", "path", "added_at")


@dataclass(frozen=True)
class SalvageReport:
    chats: int
    messages: int


def salvage_database(broken: Path, fresh: Path) -> SalvageReport:
    """Copy every readable chat and message of `broken` (opened read-only) into the database at `fresh`."""
    try:
        source = sqlite3.connect(f"{Path(broken).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return SalvageReport(0, 0)
    target = open_database(fresh)
    try:
        has_projects = _has_column(source, "chats", "project_id")
        chat_columns = _CHAT_COLUMNS + (("project_id",) if has_projects else ())
        chats = list(_readable_rows(source, "chats", chat_columns))
        projects = list(_readable_rows(source, "projects", _PROJECT_COLUMNS)) if has_projects else []
        documents = list(_readable_rows(source, "project_documents", _DOCUMENT_COLUMNS)) if has_projects else []
        message_columns = _MESSAGE_COLUMNS + tuple(
            c for c in _LATER_MESSAGE_COLUMNS if _has_column(source, "messages", c)
        )
        messages = list(_readable_rows(source, "messages", message_columns))
        with transaction(target):
            kept_projects = {row[0] for row in _insert(target, "projects", _PROJECT_COLUMNS, projects)}
            _insert(target, "project_documents", _DOCUMENT_COLUMNS, documents)  # a lost project's are refused
            if has_projects:  # a chat whose project was lost is kept, in no project
                chats = [(*row[:-1], row[-1] if row[-1] in kept_projects else None) for row in chats]
            kept_chats = _insert(target, "chats", chat_columns, chats)
            chat_ids = {row[0] for row in kept_chats}
            orphans = {m[1] for m in messages if m[1] not in chat_ids}
            for chat_id in sorted(orphans):
                when = min((m[4] for m in messages if m[1] == chat_id and isinstance(m[4], float)), default=time.time())
                _insert(target, "chats", _CHAT_COLUMNS, [(chat_id, RECOVERED_TITLE, when, when, "{}")])
            kept_messages = _insert(target, "messages", message_columns, messages)
        return SalvageReport(len(kept_chats), len(kept_messages))
    finally:
        source.close()
        target.close()


def _insert(conn: sqlite3.Connection, table: str, columns: tuple[str, ...], rows: list[tuple]) -> list[tuple]:
    """Insert each row on its own, skipping rows the schema refuses (a damaged value); returns those kept."""
    sql = f"INSERT OR IGNORE INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))})"
    kept = []
    for row in rows:
        try:
            if conn.execute(sql, row).rowcount:
                kept.append(row)
        except sqlite3.Error:
            continue
    return kept


def _has_column(conn: sqlite3.Connection, table: str, column: str) -> bool:
    try:
        return any(row[1] == column for row in conn.execute(f"PRAGMA table_info({table})"))
    except sqlite3.Error:
        return False


def _readable_rows(conn: sqlite3.Connection, table: str, columns: tuple[str, ...]) -> Iterator[tuple]:
    """Every row of `table` SQLite can still read, by rowid. A damaged b-tree fails a whole scan at its first bad
    page, so rows are fetched one at a time up to the highest id the table or its sequence remembers."""
    upper = 0
    for sql, args in (
        (f"SELECT max(rowid) FROM {table}", ()),
        ("SELECT seq FROM sqlite_sequence WHERE name = ?", (table,)),
    ):
        try:
            value = conn.execute(sql, args).fetchone()
        except sqlite3.Error:
            continue
        if value and isinstance(value[0], int):
            upper = max(upper, value[0])
    if upper == 0:
        yield from _scan_until_damage(conn, f"SELECT {', '.join(columns)} FROM {table}")
        return
    select = f"SELECT {', '.join(columns)} FROM {table} WHERE rowid = ?"
    for rowid in range(1, upper + 1):
        try:
            row = conn.execute(select, (rowid,)).fetchone()
        except sqlite3.Error:
            continue
        if row is not None:
            yield tuple(row)


def _scan_until_damage(conn: sqlite3.Connection, sql: str) -> Iterator[tuple]:
    try:
        for row in conn.execute(sql):
            yield tuple(row)
    except sqlite3.Error:
        return
