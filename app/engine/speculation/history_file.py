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


def history_path(book: str = "person") -> Path:
    """The person's history (chats, the CLI), or API clients' own ("api"), which never holds the person's text."""
    return paths.user_data_dir() / ("history.sqlite3" if book == "person" else f"history-{book}.sqlite3")


def _book_files(book: str) -> list[Path]:
    main = history_path(book)
    return [main, Path(f"{main}-wal"), Path(f"{main}-shm")]


def api_history_size() -> int:
    """Bytes on disk of API clients' own history (0 when there is none)."""
    return sum(path.stat().st_size for path in _book_files("api") if path.exists())


def clear_api_history() -> None:
    """Forget API clients' own history: its file goes; an engine that indexed it drops it before its next reply
    (the new file's change counter differs)."""
    for path in _book_files("api"):
        path.unlink(missing_ok=True)


class HistoryFile:
    """Past texts by session. Each call opens its own short connection, so any thread or process may call it.

    A damaged file is set aside (renamed, never deleted) and a new one started. A file that cannot be written (a
    read-only data folder, a full disk) turns history off: calls return nothing and drafting goes on without it.
    Either way `take_notice` says so, once, in words. The size cap counts bytes of UTF-8, kept as a running total
    by triggers, so a save never reads the whole file.
    """

    def __init__(self, path: Optional[Path] = None, max_bytes: int = HISTORY_FILE_BYTES):
        self.path = Path(path) if path is not None else history_path()
        self.max_bytes = max_bytes
        self.problem = ""  # why history is off ("" while it is on)
        self._notice = ""  # what a person should hear once: history off, or a damaged file set aside
        self.read_only = False  # drafts from what is there, adds nothing (a benchmark's second pass)

    def take_notice(self) -> str:
        """What happened to the file that a person should know, once ("" when nothing, or already told)."""
        notice, self._notice = self._notice, ""
        return notice

    @contextlib.contextmanager
    def _connect(self) -> Iterator[Optional[sqlite3.Connection]]:
        conn = None if self.problem else self._open()
        if conn is None:
            yield None
            return
        try:
            with conn:
                yield conn
        except sqlite3.Error as exc:
            self._failed(exc)
        finally:
            conn.close()

    def _open(self) -> Optional[sqlite3.Connection]:
        for _ in range(2):  # a damaged file is set aside once, and a new one tried
            conn = None
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_S)
                with conn:
                    _prepare(conn)
                return conn
            except (OSError, sqlite3.Error) as exc:
                if conn is not None:
                    conn.close()
                if not self._failed(exc):
                    return None
        return None

    def _failed(self, exc: BaseException) -> bool:
        """Say what went wrong; True when the file was damaged and set aside, so a new one may be started."""
        if _is_damage(exc) and not self.problem:
            aside = self.path.with_name(f"{self.path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
            try:
                self.path.rename(aside)
                for suffix in ("-wal", "-shm"):
                    Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            except OSError:
                pass
            else:
                self._notice = (
                    f"The history of earlier replies ({self.path.name}) was damaged; it was set aside "
                    f"as {aside.name} and a new one started."
                )
                return True
        why = "cannot be used" if isinstance(exc, sqlite3.Error) else "cannot be opened"
        self.problem = f"Drafting from history is off: {self.path} {why} ({exc})."
        self._notice = self.problem
        return False

    def add(self, session: str, text: str) -> int:
        """Keep a text; returns its id (-1 when history is off). The oldest texts go when the file is full."""
        if not text or self.read_only:
            return -1
        with self._connect() as conn:
            if conn is None:
                return -1
            row = conn.execute(
                "INSERT INTO texts (session, text, used, bytes) VALUES (?, ?, ?, ?)",
                (session, text, time.time(), len(text.encode("utf-8", "surrogatepass"))),
            )
            text_id = row.lastrowid if row.lastrowid is not None else -1
            excess = conn.execute("SELECT bytes FROM changes").fetchone()[0] - self.max_bytes
            if excess > 0:  # the oldest go, read from the index alone
                for old_id, size in conn.execute("SELECT id, bytes FROM texts ORDER BY used, id"):
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
        """Every text's id -> its size in bytes, the most recently used last."""
        with self._connect() as conn:
            if conn is None:
                return {}
            return dict(conn.execute("SELECT id, bytes FROM texts ORDER BY used, id").fetchall())
        return {}

    def texts(self, ids: Sequence[int]) -> list[tuple[int, str, str]]:
        """(id, session, text) of these ids, in the order given (ids gone meanwhile are left out)."""
        with self._connect() as conn:
            if conn is None:
                return []
            found = {}
            for start in range(0, len(ids), 500):
                chunk = list(ids[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for row in conn.execute(f"SELECT id, session, text FROM texts WHERE id IN ({marks})", chunk):
                    found[row[0]] = row
            return [found[i] for i in ids if i in found]
        return []


def _prepare(conn: sqlite3.Connection) -> None:
    """The schema, made or brought up to date. `bytes` is each text's UTF-8 size; `changes.bytes` their total, kept by
    triggers; the index on (used, id, bytes) lets the oldest be found without reading any text."""
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(
        "CREATE TABLE IF NOT EXISTS texts (id INTEGER PRIMARY KEY AUTOINCREMENT, "
        "session TEXT NOT NULL, text TEXT NOT NULL, used REAL NOT NULL, bytes INTEGER NOT NULL DEFAULT -1)"
    )
    conn.execute("CREATE TABLE IF NOT EXISTS changes (n INTEGER NOT NULL)")
    columns = {row[1] for row in conn.execute("PRAGMA table_info(texts)")}
    if "bytes" not in columns:  # a file from before sizes were kept
        conn.execute("ALTER TABLE texts ADD COLUMN bytes INTEGER NOT NULL DEFAULT -1")
    if "bytes" not in {row[1] for row in conn.execute("PRAGMA table_info(changes)")}:
        conn.execute("ALTER TABLE changes ADD COLUMN bytes INTEGER NOT NULL DEFAULT 0")
        conn.execute("UPDATE texts SET bytes = length(CAST(text AS BLOB)) WHERE bytes < 0")
        conn.execute("UPDATE changes SET bytes = (SELECT coalesce(sum(bytes), 0) FROM texts)")
    if conn.execute("SELECT count(*) FROM changes").fetchone()[0] == 0:
        conn.execute("INSERT INTO changes (n, bytes) VALUES (0, (SELECT coalesce(sum(bytes), 0) FROM texts))")
    conn.execute("CREATE INDEX IF NOT EXISTS texts_by_use ON texts (used, id, bytes)")
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS texts_added AFTER INSERT ON texts BEGIN "
        "UPDATE changes SET bytes = bytes + new.bytes; END"
    )
    conn.execute(
        "CREATE TRIGGER IF NOT EXISTS texts_removed AFTER DELETE ON texts BEGIN "
        "UPDATE changes SET bytes = bytes - old.bytes; END"
    )


def _is_damage(exc: BaseException) -> bool:
    """A file that is not (or no longer) a database, as opposed to one that is locked, read-only or full."""
    text = str(exc).lower()
    return isinstance(exc, sqlite3.DatabaseError) and ("malformed" in text or "not a database" in text)


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


class HistoryBooks:
    """The loaded target's index of each history book in use, made on first use: "person" (`file`, the window's and
    the CLI's), any other name an API client's own book (app.platform.paths). Call from the inference thread only."""

    def __init__(self, file: HistoryFile):
        self.file = file
        self._books: dict[str, HistorySync] = {}

    def forget(self) -> None:
        """Drop every index (the target changed: its tokens are another model's)."""
        self._books = {}

    def for_reply(
        self, name: str, speculative: bool, tokenize: Callable[[str], list[int]]
    ) -> tuple[Optional[HistorySync], str]:
        """Book `name` for a reply: brought up to date when the reply drafts from it (`speculative`), else only opened
        (so a damaged file is found, and said, before the reply rather than after). Returns the book and what to tell
        once ("" or a sentence: a damaged file set aside, or history off); the reply goes on either way."""
        book = self._books.get(name)
        if book is None:
            file = self.file if name == "person" else HistoryFile(history_path(name))
            book = self._books[name] = HistorySync(file, HistoryDrafter(), tokenize)
        if speculative:
            book.refresh()  # what other processes added, or forgot when a chat was deleted
        else:
            book.file.version()
        return book, book.file.take_notice()
