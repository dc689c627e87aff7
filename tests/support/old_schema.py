"""A chat database taken back to an older schema version, as that SpecChat wrote it, to test its migration.

Each entry of UNDO takes a database from version n back to n - 1; a new migration adds its undo here, so every
older-version test keeps starting from the schema it names.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from app.store import SCHEMA_VERSION


def _drop_index(conn: sqlite3.Connection, table: str) -> None:
    for trigger in ("insert", "update", "delete"):
        conn.execute(f"DROP TRIGGER {table}_{trigger}")
    conn.execute(f"DROP TABLE {table}")


UNDO = {
    2: lambda conn: _drop_index(conn, "message_search"),
    3: lambda conn: conn.execute("ALTER TABLE messages DROP COLUMN attachments"),
    4: lambda conn: (
        _drop_index(conn, "reasoning_search"),
        conn.execute("ALTER TABLE messages DROP COLUMN reasoning_tokens"),
        conn.execute("ALTER TABLE messages DROP COLUMN reasoning"),
    ),
    5: lambda conn: conn.execute("DROP TABLE branch_messages"),
    6: lambda conn: conn.execute("ALTER TABLE messages DROP COLUMN tool_calls"),
    7: lambda conn: _drop_projects(conn),
    8: lambda conn: conn.execute("ALTER TABLE messages DROP COLUMN sources"),
}


def _drop_projects(conn: sqlite3.Connection) -> None:
    conn.execute("DROP INDEX chats_by_project")
    conn.execute("ALTER TABLE chats DROP COLUMN project_id")
    conn.execute("DROP TABLE project_documents")
    conn.execute("DROP TABLE projects")


def take_back(path: Path, version: int) -> None:
    """Undo the migrations after `version` on the (closed) database at `path`."""
    conn = sqlite3.connect(path)
    try:
        for step in range(SCHEMA_VERSION, version, -1):
            UNDO[step](conn)
        conn.execute(f"PRAGMA user_version = {version}")
        conn.commit()
    finally:
        conn.close()
