"""Opening the chat database: one SQLite file, WAL journal, foreign keys on, schema versioned in `user_version`.

The database is the user's chat history, so opening it must never make things worse: a file this code does not
understand (written by a newer SpecChat, damaged, or someone else's database) is refused with an error that says
what to do, and is not written to. The refusals that can be decided from the 100-byte file header are made before
SQLite opens the file at all.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

from app.platform import paths
from app.store.errors import DatabaseCorruptError, DatabaseTooNewError, StoreError
from app.store.schema.migrations import MIGRATIONS, SCHEMA_VERSION, fold_for_search

# "SPCH": marks the file as ours in the header, so a stray SQLite file of another program is never migrated.
APPLICATION_ID = 0x53504348

_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER_SIZE = 100
# Seconds a write waits for another connection (the CLI, a second window) to finish before giving up.
_BUSY_TIMEOUT_S = 5.0


def _too_new(path: Path, version: int) -> DatabaseTooNewError:
    return DatabaseTooNewError(
        f"The chat database {path} was written by a newer version of SpecChat (schema version {version}; "
        f"this version understands up to {SCHEMA_VERSION}). Update SpecChat to open it, or move the file "
        "somewhere else to start with an empty chat history. The file has not been changed."
    )


def _corrupt(path: Path, detail: str) -> DatabaseCorruptError:
    return DatabaseCorruptError(
        f"The chat database {path} cannot be read: {detail}. Move or rename the file (keep it as a backup) "
        "and start SpecChat again to begin a new chat history. The file has not been changed."
    )


def _check_header(path: Path) -> None:
    """Refuse what the header alone proves we must not open, without letting SQLite touch the file."""
    try:
        with open(path, "rb") as f:
            header = f.read(_HEADER_SIZE)
    except FileNotFoundError:
        return
    except OSError as e:
        raise StoreError(f"The chat database {path} cannot be opened: {e.strerror or e}. Check its permissions.") from e
    if not header:
        return  # an empty file is an empty database; SQLite initialises it
    if len(header) < _HEADER_SIZE or not header.startswith(_SQLITE_MAGIC):
        raise _corrupt(path, "it is not an SQLite database")
    user_version = int.from_bytes(header[60:64], "big", signed=True)
    application_id = int.from_bytes(header[68:72], "big", signed=True)
    _check_identity(path, user_version, application_id, has_tables=None)


def _check_identity(path: Path, user_version: int, application_id: int, has_tables: bool | None) -> None:
    if application_id not in (0, APPLICATION_ID):
        raise _corrupt(path, "it is another program's SQLite database, not a SpecChat chat database")
    if application_id == 0 and (user_version != 0 or has_tables):
        raise _corrupt(path, "it is an SQLite database, but not a SpecChat chat database")
    if user_version > SCHEMA_VERSION:
        raise _too_new(path, user_version)


def _read_identity(conn: sqlite3.Connection) -> tuple[int, int, bool]:
    user_version = conn.execute("PRAGMA user_version").fetchone()[0]
    application_id = conn.execute("PRAGMA application_id").fetchone()[0]
    # Reading the schema parses page 1 and the schema table, which is where a damaged file usually shows.
    has_tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
    return user_version, application_id, has_tables


def is_corruption(error: sqlite3.DatabaseError) -> bool:
    """True when SQLite says the file is damaged or not a database (as opposed to locked, full, read-only)."""
    name = getattr(error, "sqlite_errorname", None)  # Python 3.11+
    if name is not None:
        return name.startswith(("SQLITE_CORRUPT", "SQLITE_NOTADB"))
    return type(error) is sqlite3.DatabaseError


def describe_error(path: Path, error: sqlite3.Error) -> StoreError:
    """Turn an sqlite3 error into a StoreError a person can act on."""
    if isinstance(error, sqlite3.DatabaseError) and is_corruption(error):
        return _corrupt(path, str(error))
    name = getattr(error, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_BUSY") or "locked" in str(error):
        hint = "Another program (or another SpecChat) is using it; close that and try again."
    elif name.startswith("SQLITE_FULL"):
        hint = "The disk is full; free some space and try again."
    elif name.startswith(("SQLITE_READONLY", "SQLITE_CANTOPEN", "SQLITE_PERM", "SQLITE_IOERR")):
        hint = "Check that the file and its folder exist and are writable."
    else:
        hint = "Try again; if it keeps happening, restart SpecChat."
    return StoreError(f"The chat database {path} could not be used: {error}. {hint}")


def open_database(path: Path | None = None, check_pages: bool = True) -> sqlite3.Connection:
    """Open (creating if needed) and migrate the chat database; `path` defaults to app.platform.paths.database_path().

    `check_pages=False` leaves out reading every page for damage (seconds for a large history): the window does
    that on a thread of its own after it shows (find_damage), so it starts at once.

    Raises DatabaseTooNewError, DatabaseCorruptError or StoreError; in the first two cases the file is left
    byte-for-byte as it was. The connection is in autocommit mode: group writes with `transaction(conn)`.
    """
    path = Path(path) if path is not None else paths.database_path()
    _check_header(path)

    wal = path.with_name(path.name + "-wal")
    if wal.exists() and wal.stat().st_size > 0:
        # A previous run ended without a checkpoint: the newest header may be in the WAL, not in the file. Check it
        # on a read-only connection, because closing a writable one would checkpoint the WAL into a file that we
        # may be about to refuse.
        _check_read_only(path)

    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise StoreError(f"The folder for the chat database {path.parent} cannot be created: {e}.") from e

    try:
        conn = sqlite3.connect(path, timeout=_BUSY_TIMEOUT_S, isolation_level=None)
    except sqlite3.Error as e:
        raise describe_error(path, e) from e
    try:
        # Everything up to the migration only reads, so a refusal here leaves the file as it was.
        _check_identity(path, *_read_identity(conn))
        if check_pages:
            _check_intact(path, conn)
        conn.execute("PRAGMA foreign_keys = ON")
        conn.create_function("specchat_fold", 1, fold_for_search, deterministic=True)
        # WAL: a crash mid-write never damages committed data, and readers (the CLI) do not block the window.
        conn.execute("PRAGMA journal_mode = WAL")
        # FULL syncs each commit: a finished reply survives a power cut, not only a crash. Commits are a few per
        # reply, so the cost is invisible.
        conn.execute("PRAGMA synchronous = FULL")
        _migrate(path, conn)
    except StoreError:
        conn.close()
        raise
    except sqlite3.Error as e:
        conn.close()
        raise describe_error(path, e) from e
    return conn


def _check_intact(path: Path, conn: sqlite3.Connection) -> None:
    """Refuse a file whose pages are damaged behind a good header and schema: quick_check reads every page, which
    is the only way to learn now, not later when a chat that happens to live on a bad page is opened."""
    try:
        problems = [str(row[0]) for row in conn.execute("PRAGMA quick_check(3)").fetchall()]
    except sqlite3.DatabaseError as e:
        if not is_corruption(e):
            raise
        problems = [str(e)]
    if problems != ["ok"]:
        raise _corrupt(path, f"it is damaged ({'; '.join(problems)})")


def find_damage(path: Path) -> str | None:
    """Read every page of the database on a read-only connection of its own (any thread): the refusal a damaged
    file gets, or None when it is intact."""
    try:
        conn = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True, timeout=_BUSY_TIMEOUT_S)
    except sqlite3.Error:
        return None  # not readable now (moved, locked): the next start checks again
    try:
        _check_intact(Path(path), conn)
    except DatabaseCorruptError as e:
        return str(e)
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return None


def _check_read_only(path: Path) -> None:
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=_BUSY_TIMEOUT_S)
    except sqlite3.Error as e:
        raise describe_error(path, e) from e
    try:
        _check_identity(path, *_read_identity(conn))
    except sqlite3.Error as e:
        raise describe_error(path, e) from e
    finally:
        conn.close()


def _migrate(path: Path, conn: sqlite3.Connection) -> None:
    with transaction(conn):
        # Read again under the write lock: another process may have migrated since we looked.
        version, application_id, has_tables = _read_identity(conn)
        _check_identity(path, version, application_id, has_tables)
        if version == SCHEMA_VERSION:
            return
        for step in MIGRATIONS[version:]:
            step(conn)
        # Both pragmas write the header inside this transaction, so a crash leaves the old version, not a mix.
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")


@contextlib.contextmanager
def reported(path: Path) -> Iterator[None]:
    """sqlite3 errors become a StoreError that names `path` and says what to do; a caller's bug (wrong thread, a
    closed connection) is raised as it is."""
    try:
        yield
    except (sqlite3.ProgrammingError, sqlite3.InterfaceError):
        raise
    except sqlite3.Error as e:
        raise describe_error(path, e) from e


@contextlib.contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK if the block raises. Not reentrant."""
    # IMMEDIATE takes the write lock up front, so a read-then-write block cannot fail half way on a busy database.
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


def set_aside_database(path: Path | None = None) -> Path:
    """Rename a refused database (and its -wal/-shm files) out of the way, so SpecChat can start a fresh history.

    For the window's "start over" button after DatabaseCorruptError or DatabaseTooNewError; the file is kept,
    renamed to `<name>.broken-<timestamp>`. Returns the new path of the main file.
    """
    path = Path(path) if path is not None else paths.database_path()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    target = path.with_name(f"{path.name}.broken-{stamp}")
    n = 1
    while target.exists():
        target = path.with_name(f"{path.name}.broken-{stamp}-{n}")
        n += 1
    try:
        # Sidecars first: a -wal left next to a new empty database would be replayed into it.
        for suffix in ("-wal", "-shm"):
            sidecar = path.with_name(path.name + suffix)
            if sidecar.exists():
                os.replace(sidecar, target.with_name(target.name + suffix))
        os.replace(path, target)
    except OSError as e:
        raise StoreError(f"The chat database {path} could not be moved aside: {e}. Move it by hand.") from e
    return target


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
