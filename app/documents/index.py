"""The documents index as the indexer and the search use it: documents by path, their passages and vectors.

`DocumentIndex` is used by one thread at a time (the CLI's, or the one errand that indexes). Each document is
written in one transaction (its old passages out, its new ones in), so a cancel, a crash or a full disk leaves every
document either as it was or as it is now, never half of one.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from app.documents.index_db import open_index
from app.documents.records import DocumentText, Passage


@dataclass(frozen=True)
class IndexedDocument:
    """A document's row: what a refresh compares the file with."""

    id: int
    path: str
    size: int
    mtime_ns: int
    sha256: str


@dataclass(frozen=True)
class StoredPassage:
    id: int
    path: str
    start: int
    end: int
    page: Optional[int]
    heading: str
    text: str


def under(path: str, roots: Iterable[str]) -> bool:
    """Whether `path` is one of `roots` or inside one of them (absolute paths)."""
    return any(path == root or path.startswith(root.rstrip(os.sep) + os.sep) for root in roots)


class DocumentIndex:
    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.conn: sqlite3.Connection = open_index(self.path)
        self._vectors: Optional[tuple[np.ndarray, np.ndarray]] = None  # (passage ids, matrix), loaded once

    def close(self) -> None:
        self.conn.close()

    def __enter__(self) -> "DocumentIndex":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- documents ------------------------------------------------------------------------------------------------

    def documents(self, roots: Optional[Iterable[str]] = None) -> dict[str, IndexedDocument]:
        """The indexed documents by path, those under `roots` only when given."""
        rows = self.conn.execute("SELECT id, path, size, mtime_ns, sha256 FROM documents").fetchall()
        chosen = list(roots) if roots is not None else None
        return {row[1]: IndexedDocument(*row) for row in rows if chosen is None or under(row[1], chosen)}

    def touch(self, document_id: int, size: int, mtime_ns: int) -> None:
        """A file whose time changed but whose content did not: its new identity, its passages kept."""
        with self.conn:
            self.conn.execute("UPDATE documents SET size = ?, mtime_ns = ? WHERE id = ?", (size, mtime_ns, document_id))

    def write_document(
        self,
        document: DocumentText,
        size: int,
        mtime_ns: int,
        sha256: str,
        passages: list[Passage],
        vectors: Optional[np.ndarray] = None,
    ) -> None:
        """The document and its passages (and their vectors, one row each) in place of what was indexed of it."""
        with self.conn:
            self._delete(document.path)
            cursor = self.conn.execute(
                "INSERT INTO documents (path, kind, size, mtime_ns, sha256, chars) VALUES (?, ?, ?, ?, ?, ?)",
                (document.path, document.kind, size, mtime_ns, sha256, len(document.text)),
            )
            document_id = cursor.lastrowid
            for number, passage in enumerate(passages):
                row = self.conn.execute(
                    "INSERT INTO passages (document_id, start, end, page, heading, text) VALUES (?, ?, ?, ?, ?, ?)",
                    (document_id, passage.start, passage.end, passage.page, passage.heading, passage.text),
                )
                if vectors is not None:
                    self.conn.execute(
                        "INSERT INTO passage_vectors (passage_id, vector) VALUES (?, ?)",
                        (row.lastrowid, np.ascontiguousarray(vectors[number], dtype=np.float32).tobytes()),
                    )
        self._vectors = None

    def keep_only(self, roots: Iterable[str]) -> int:
        """Take out every document not under one of `roots` (files and folders), and all that was indexed of it;
        how many went."""
        kept = [os.path.abspath(root) for root in roots]
        gone = [path for path in self.documents() if not under(path, kept)]
        with self.conn:
            for path in gone:
                self._delete(path)
        if gone:
            self._vectors = None
        return len(gone)

    def remove_document(self, path: str) -> None:
        """The document and everything indexed of it: its row, passages, words and vectors."""
        with self.conn:
            self._delete(path)
        self._vectors = None

    def _delete(self, path: str) -> None:
        row = self.conn.execute("SELECT id FROM documents WHERE path = ?", (path,)).fetchone()
        if row is None:
            return
        # Explicitly, child first, so the word index's trigger sees each passage go.
        self.conn.execute(
            "DELETE FROM passage_vectors WHERE passage_id IN (SELECT id FROM passages WHERE document_id = ?)", row
        )
        self.conn.execute("DELETE FROM passages WHERE document_id = ?", row)
        self.conn.execute("DELETE FROM documents WHERE id = ?", row)

    # -- vectors --------------------------------------------------------------------------------------------------

    def embedder_name(self) -> str:
        row = self.conn.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
        return str(row[0]) if row else ""

    def use_embedder(self, name: str) -> None:
        """Vectors come from the embedder `name` from now on: another's are dropped (they cannot be compared)."""
        if name == self.embedder_name():
            return
        with self.conn:
            self.conn.execute("DELETE FROM passage_vectors")
            self.conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('embedder', ?)", (name,))
        self._vectors = None

    def passages_without_vectors(self, document_id: int) -> list[tuple[int, str]]:
        return self.conn.execute(
            "SELECT p.id, p.text FROM passages p LEFT JOIN passage_vectors v ON v.passage_id = p.id "
            "WHERE p.document_id = ? AND v.passage_id IS NULL ORDER BY p.id",
            (document_id,),
        ).fetchall()

    def add_vectors(self, passage_ids: list[int], vectors: np.ndarray) -> None:
        with self.conn:
            self.conn.executemany(
                "INSERT OR REPLACE INTO passage_vectors (passage_id, vector) VALUES (?, ?)",
                [(pid, np.ascontiguousarray(v, dtype=np.float32).tobytes()) for pid, v in zip(passage_ids, vectors)],
            )
        self._vectors = None

    def vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """(passage ids, one float32 row each), read once and kept until the index changes."""
        if self._vectors is None:
            rows = self.conn.execute("SELECT passage_id, vector FROM passage_vectors ORDER BY passage_id").fetchall()
            ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            if rows:
                matrix = np.frombuffer(b"".join(row[1] for row in rows), dtype=np.float32).reshape(len(rows), -1)
            else:
                matrix = np.zeros((0, 0), dtype=np.float32)
            self._vectors = (ids, matrix)
        return self._vectors

    # -- passages -------------------------------------------------------------------------------------------------

    def passage_count(self) -> int:
        return int(self.conn.execute("SELECT count(*) FROM passages").fetchone()[0])

    def passages(self, ids: list[int]) -> dict[int, StoredPassage]:
        """The passages with these ids, by id (ids no longer indexed are absent)."""
        found: dict[int, StoredPassage] = {}
        for chunk in range(0, len(ids), 500):
            part = ids[chunk : chunk + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(
                "SELECT p.id, d.path, p.start, p.end, p.page, p.heading, p.text FROM passages p "
                f"JOIN documents d ON d.id = p.document_id WHERE p.id IN ({marks})",
                part,
            ):
                found[row[0]] = StoredPassage(*row)
        return found

    def document_ids(self, roots: Iterable[str]) -> list[int]:
        return [doc.id for doc in self.documents(roots).values()]
