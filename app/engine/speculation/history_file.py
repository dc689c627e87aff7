"""The history drafter's texts on disk, and keeping a loaded model's index in step with them.

The file holds text, not tokens: each model tokenizes it its own way when it is loaded. It is one SQLite file in
the data folder (WAL, so the window, its engine process and the CLI may all use it at once), bounded in size: the
least recently used texts go first. A text belongs to a session ("chat-12", "cli"): deleting a chat forgets its
session's texts, and every engine that holds them drops them before its next reply (a counter in the file says that
something changed). Nothing here leaves the machine.
"""

from __future__ import annotations

import contextlib
import sqlite3
import time
from pathlib import Path
from typing import Callable, Iterator, Optional, Sequence

from app.engine.speculation.history import HistoryDrafter
from app.platform import paths

HISTORY_FILE_BYTES = 64 * 1024 * 1024  # of text; a token is about 4 bytes, so this outlasts the index's memory
_BUSY_TIMEOUT_S = 2.0
CLI_SESSION = "cli"
TEXT_BYTES_PER_TOKEN = 4  # about, for English and code


def history_path() -> Path:
    return paths.user_data_dir() / "history.sqlite3"


class HistoryFile:
    """Past texts by session. Each call opens its own short connection, so any thread or process may call it.

    A file that cannot be read or written (a read-only data folder, a damaged file) turns history off: calls
    return nothing and `problem` says why, once, in words; drafting goes on without history.
    """

    def __init__(self, path: Optional[Path] = None, max_bytes: int = HISTORY_FILE_BYTES):
        self.path = Path(path) if path is not None else history_path()
        self.max_bytes = max_bytes
        self.problem = ""
        self.read_only = False  # drafts from what is there, adds nothing (a benchmark's second pass)

    @contextlib.contextmanager
    def _connect(self) -> Iterator[Optional[sqlite3.Connection]]:
        if self.problem:
            yield None
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S)
        except (OSError, sqlite3.Error) as exc:
            self.problem = f"Drafting from history is off: {self.path} cannot be opened ({exc})."
            yield None
            return
        try:
            with conn:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("CREATE TABLE IF NOT EXISTS texts (id INTEGER PRIMARY KEY AUTOINCREMENT, "
                             "session TEXT NOT NULL, text TEXT NOT NULL, used REAL NOT NULL)")
                conn.execute("CREATE TABLE IF NOT EXISTS changes (n INTEGER NOT NULL)")
                if conn.execute("SELECT count(*) FROM changes").fetchone()[0] == 0:
                    conn.execute("INSERT INTO changes VALUES (0)")
                yield conn
        except sqlite3.Error as exc:
            self.problem = f"Drafting from history is off: {self.path} cannot be used ({exc})."
        finally:
            conn.close()

    def add(self, session: str, text: str) -> int:
        """Keep a text; returns its id (-1 when history is off). The oldest texts go when the file is full."""
        if not text or self.read_only:
            return -1
        with self._connect() as conn:
            if conn is None:
                return -1
            row = conn.execute("INSERT INTO texts (session, text, used) VALUES (?, ?, ?)",
                               (session, text, time.time()))
            text_id = row.lastrowid if row.lastrowid is not None else -1
            total = conn.execute("SELECT coalesce(sum(length(text)), 0) FROM texts").fetchone()[0]
            if total > self.max_bytes:
                excess = total - self.max_bytes
                for old_id, size in conn.execute("SELECT id, length(text) FROM texts ORDER BY used, id").fetchall():
                    if excess <= 0 or old_id == text_id:
                        break
                    conn.execute("DELETE FROM texts WHERE id = ?", (old_id,))
                    excess -= size
            conn.execute("UPDATE changes SET n = n + 1")
            return text_id
        return -1

    def forget(self, session: str) -> None:
        """Forget every text of a session (a deleted chat)."""
        with self._connect() as conn:
            if conn is not None:
                conn.execute("DELETE FROM texts WHERE session = ?", (session,))
                conn.execute("UPDATE changes SET n = n + 1")

    def version(self) -> int:
        """A number that changes whenever texts are added or forgotten."""
        with self._connect() as conn:
            return int(conn.execute("SELECT n FROM changes").fetchone()[0]) if conn is not None else -1
        return -1

    def ids(self) -> dict[int, int]:
        """Every text's id -> its length, the most recently used last."""
        with self._connect() as conn:
            if conn is None:
                return {}
            return dict(conn.execute("SELECT id, length(text) FROM texts ORDER BY used, id").fetchall())
        return {}

    def texts(self, ids: Sequence[int]) -> list[tuple[int, str, str]]:
        """(id, session, text) of these ids, in the order given (ids gone meanwhile are left out)."""
        with self._connect() as conn:
            if conn is None:
                return []
            found = {}
            for start in range(0, len(ids), 500):
                chunk = list(ids[start:start + 500])
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(f"SELECT id, session, text FROM texts WHERE id IN ({marks})", chunk):
                    found[row[0]] = row
            return [found[i] for i in ids if i in found]
        return []


class HistorySync:
    """A loaded model's history index kept in step with the file. Call from the inference thread only."""

    def __init__(self, file: HistoryFile, drafter: HistoryDrafter, tokenize: Callable[[str], list[int]]):
        self.file = file
        self.drafter = drafter
        self._tokenize = tokenize
        self._version: Optional[int] = None

    def refresh(self) -> None:
        """Drop what the file forgot and index what others added, if anything changed since the last look."""
        version = self.file.version()
        if version == self._version:
            return
        ids = self.file.ids()
        held = self.drafter.keys()
        self.drafter.remove(held - set(ids))
        # The most recently used texts that fit the index's memory, oldest first so they age in the same order.
        wanted, budget = [], self.drafter.max_tokens * TEXT_BYTES_PER_TOKEN
        for text_id, size in reversed(list(ids.items())):
            budget -= size
            if budget < 0:
                break
            if text_id not in held:
                wanted.append(text_id)
        for text_id, session, text in self.file.texts(wanted[::-1]):
            self.drafter.add(text_id, session, self._tokenize(text))
        self._version = version

    def record(self, session: str, text: str) -> None:
        """A reply finished: keep its text and index it now."""
        self.refresh()
        text_id = self.file.add(session, text)
        if text_id >= 0:
            self.drafter.add(text_id, session, self._tokenize(text))
            self._version = self.file.version()
