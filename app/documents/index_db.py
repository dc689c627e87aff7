"""The documents index: one SQLite file of its own (documents.db in the data folder, or `index --db FILE`).

Its own file, not tables in the chat database: an index is rebuilt from the files it names at any time, a
folder of PDFs makes it hundreds of MB (vectors included) that a backup of the chats need not carry, and a damaged
or outgrown index is deleted without touching a chat. Tables:
- documents: one row per file (path, kind, size, mtime, sha256), the identity a refresh compares;
- passages: each passage's offsets, page, heading and text; `passage_words` indexes them with FTS5 (external
  content, so the text is stored once; triggers keep it current), with the porter stemmer so "install" finds
  "installing";
- passage_vectors: one float32 BLOB per passage, in a table of its own so that loading the vectors never reads the
  texts. `meta` names the embedder the vectors came from; another embedder's vectors are dropped, never mixed.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from app.platform.paths import user_data_dir

SCHEMA_VERSION = 1
INDEX_FILE_NAME = "documents.db"
# The window's projects keep an index of their own: what a project no longer lists is taken out of it, which the
# CLI's index, holding whatever a person indexed by hand, must never have done to it.
PROJECT_INDEX_FILE_NAME = "project-documents.db"

_SCHEMA = """
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE documents (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    kind TEXT NOT NULL,
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    chars INTEGER NOT NULL
);
CREATE TABLE passages (
    id INTEGER PRIMARY KEY,
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    start INTEGER NOT NULL,
    end INTEGER NOT NULL,
    page INTEGER,
    heading TEXT NOT NULL,
    text TEXT NOT NULL
);
CREATE INDEX passages_by_document ON passages(document_id);
CREATE TABLE passage_vectors (
    passage_id INTEGER PRIMARY KEY REFERENCES passages(id) ON DELETE CASCADE,
    vector BLOB NOT NULL
);
CREATE VIRTUAL TABLE passage_words USING fts5(
    heading, text, content = 'passages', content_rowid = 'id', tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TRIGGER passages_added AFTER INSERT ON passages BEGIN
    INSERT INTO passage_words(rowid, heading, text) VALUES (new.id, new.heading, new.text);
END;
CREATE TRIGGER passages_removed AFTER DELETE ON passages BEGIN
    INSERT INTO passage_words(passage_words, rowid, heading, text) VALUES ('delete', old.id, old.heading, old.text);
END;
"""


class IndexFileError(ValueError):
    """An index file that cannot be used, with one sentence naming it and what to do."""


def default_index_path() -> Path:
    """documents.db beside the chats, in the data folder."""
    return user_data_dir() / INDEX_FILE_NAME


def open_index(path: str | Path) -> sqlite3.Connection:
    """The index at `path`, created when absent. Raises IndexFileError with one sentence."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(str(path), timeout=10.0)
    except (OSError, sqlite3.Error) as exc:
        raise IndexFileError(f"The documents index {path} could not be opened ({exc}).") from None
    try:
        conn.execute("PRAGMA foreign_keys = ON")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version == 0:
            conn.execute("PRAGMA journal_mode = WAL")
            with conn:
                conn.executescript(_SCHEMA)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        elif version > SCHEMA_VERSION:
            raise IndexFileError(
                f"The documents index {path} was written by a newer SpecChat; index into another file (--db)."
            )
    except sqlite3.DatabaseError as exc:
        conn.close()
        raise IndexFileError(
            f"{path} is not a documents index SpecChat can read ({exc}); delete it and index again."
        ) from None
    except IndexFileError:
        conn.close()
        raise
    return conn
