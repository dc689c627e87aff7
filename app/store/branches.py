"""Branches of a chat: the versions Regenerate and Edit leave behind, and moving between them.

A chat is a tree whose current path is what the `messages` table holds: loading a chat, searching it and building a
prompt read that table and see the current branch only. A regenerated reply or an edited user message forks the
chat after the message before it (the fork, 0 at the chat's start); the version being replaced, with everything
after it, moves to `branch_messages` under that fork. A version is named by the id of its first message, so the
versions of a fork are numbered in the order they were written (ids only grow). Switching moves the current tail
out and the chosen one back, ids kept, so the path stays in id order. Rows move whole, as JSON of every column,
so a column added by a later migration travels with them.

Functions here run inside the caller's transaction (ChatStore._write). No Qt.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass


@dataclass(frozen=True)
class Versions:
    """The versions of one forked message, as the switcher shows them: "‹ index/count ›"."""

    index: int  # 1-based: which of them is the current one
    count: int
    previous: int | None  # the first message id of the version before (None: this is the first)
    following: int | None  # the first message id of the version after (None: this is the last)


def fork_of(conn: sqlite3.Connection, chat_id: int, message_id: int) -> int:
    row = conn.execute("SELECT max(id) FROM messages WHERE chat_id = ? AND id < ?", (chat_id, message_id)).fetchone()
    return row[0] or 0


def _columns(conn: sqlite3.Connection) -> list[str]:
    return [row[1] for row in conn.execute("PRAGMA table_info(messages)").fetchall()]


def set_aside(conn: sqlite3.Connection, chat_id: int, message_id: int) -> int:
    """Move the message `message_id` and every later one of the current branch into a stored version; returns how
    many moved. The caller then writes the new version (a regenerated reply, an edited message)."""
    fork = fork_of(conn, chat_id, message_id)
    columns = _columns(conn)
    rows = conn.execute(
        f"SELECT {', '.join(columns)} FROM messages WHERE chat_id = ? AND id >= ? ORDER BY id", (chat_id, message_id)
    ).fetchall()
    conn.executemany(
        "INSERT INTO branch_messages (id, chat_id, fork_after, tail_start, row) VALUES (?, ?, ?, ?, ?)",
        [(row[0], chat_id, fork, message_id, json.dumps(dict(zip(columns, tuple(row))))) for row in rows],
    )
    conn.execute("DELETE FROM messages WHERE chat_id = ? AND id >= ?", (chat_id, message_id))
    return len(rows)


def _bring_back(conn: sqlite3.Connection, chat_id: int, fork: int, tail_start: int) -> None:
    columns = set(_columns(conn))
    rows = conn.execute(
        "SELECT row FROM branch_messages WHERE chat_id = ? AND fork_after = ? AND tail_start = ? ORDER BY id",
        (chat_id, fork, tail_start),
    ).fetchall()
    for (encoded,) in rows:
        # Columns this schema no longer has are left out; ones it added since keep their defaults.
        values = {k: v for k, v in json.loads(encoded).items() if k in columns}
        names = list(values)
        conn.execute(
            f"INSERT INTO messages ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [values[n] for n in names],
        )
    conn.execute(
        "DELETE FROM branch_messages WHERE chat_id = ? AND fork_after = ? AND tail_start = ?",
        (chat_id, fork, tail_start),
    )


def _version_starts(conn: sqlite3.Connection, chat_id: int, fork: int) -> list[int]:
    rows = conn.execute(
        "SELECT DISTINCT tail_start FROM branch_messages WHERE chat_id = ? AND fork_after = ?", (chat_id, fork)
    ).fetchall()
    return [row[0] for row in rows]


def switch(conn: sqlite3.Connection, chat_id: int, message_id: int, version_start: int) -> bool:
    """Make the version that starts with `version_start` current in place of the one starting at `message_id` (a
    message of the current branch). False when there is no such version at that fork (nothing changes)."""
    fork = fork_of(conn, chat_id, message_id)
    if version_start == message_id or version_start not in _version_starts(conn, chat_id, fork):
        return False
    set_aside(conn, chat_id, message_id)
    _bring_back(conn, chat_id, fork, version_start)
    return True


def versions(conn: sqlite3.Connection, chat_id: int) -> dict[int, Versions]:
    """The versions of each forked message of the current branch, by that message's id (messages that were never
    regenerated or edited are not in it)."""
    path = [row[0] for row in conn.execute("SELECT id FROM messages WHERE chat_id = ? ORDER BY id", (chat_id,))]
    stored: dict[int, set[int]] = {}
    for fork, start in conn.execute(
        "SELECT DISTINCT fork_after, tail_start FROM branch_messages WHERE chat_id = ?", (chat_id,)
    ):
        stored.setdefault(fork, set()).add(start)
    result: dict[int, Versions] = {}
    for n, message_id in enumerate(path):
        fork = path[n - 1] if n else 0
        if fork not in stored:
            continue
        starts = sorted(stored[fork] | {message_id})
        index = starts.index(message_id)
        result[message_id] = Versions(
            index + 1,
            len(starts),
            starts[index - 1] if index else None,
            starts[index + 1] if index + 1 < len(starts) else None,
        )
    return result


def forget_after(conn: sqlite3.Connection, chat_id: int, gone: list[int]) -> None:
    """The messages `gone` were deleted: their stored versions go too, and theirs in turn, so no row is left that
    no branch reaches."""
    while gone:
        placeholders = ", ".join("?" * len(gone))
        rows = conn.execute(
            f"SELECT id FROM branch_messages WHERE chat_id = ? AND fork_after IN ({placeholders})", (chat_id, *gone)
        ).fetchall()
        gone = [row[0] for row in rows]
        if gone:
            conn.execute(f"DELETE FROM branch_messages WHERE id IN ({', '.join('?' * len(gone))})", gone)


def show_another(conn: sqlite3.Connection, chat_id: int, fork: int) -> None:
    """The current version after `fork` was deleted: the newest stored one becomes current, so the others stay
    reachable (deleting one version of a reply keeps the rest)."""
    if conn.execute("SELECT 1 FROM messages WHERE chat_id = ? AND id > ?", (chat_id, fork)).fetchone():
        return
    starts = _version_starts(conn, chat_id, fork)
    if starts:
        _bring_back(conn, chat_id, fork, max(starts))
