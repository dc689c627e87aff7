"""The projects in the chat database: made, renamed, changed and deleted, and chats moved in and out.

A chat is in one project or none (`chats.project_id`, NULL for none). The instructions are added to the system
prompt of every chat in the project when a reply is asked for, not copied into the chats, so changing them changes
every chat's next reply. The documents are paths (files or folders) kept with the project; reading and indexing
them is the document index's job, not the store's.

Thread: the chat store's (the GUI thread); it shares the ChatStore's connection (`ChatStore.projects`).
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from app.common.text import valid_text
from app.store.attachments import delete_chat_pictures
from app.store.db import reported, transaction
from app.store.projects.sources import Source, sources_by_message
from app.store.errors import NotFoundError
from app.store.projects.records import Project, clean_name


class ProjectStore:
    """Projects in the chat database. Every method commits before it returns; errors are StoreError."""

    def __init__(self, conn: sqlite3.Connection, path: Path, pictures_beside: Callable[[], Path]):
        self._conn = conn
        self._path = path
        self._pictures_beside = pictures_beside  # where deleted chats' picture folders are (ChatStore's)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with reported(self._path), transaction(self._conn) as conn:
            yield conn

    # -- reading --------------------------------------------------------------------------------------------

    def list_projects(self) -> list[Project]:
        """Every project in the order its header shows (position, then age)."""
        with reported(self._path):
            rows = self._conn.execute("SELECT * FROM projects ORDER BY position, id").fetchall()
            documents = self._documents_by_project()
        return [_project_from_row(row, documents.get(row["id"], ())) for row in rows]

    def get_project(self, project_id: int) -> Project | None:
        with reported(self._path):
            row = self._conn.execute("SELECT * FROM projects WHERE id = ?", (project_id,)).fetchone()
            documents = self._documents_by_project(project_id)
        return _project_from_row(row, documents.get(project_id, ())) if row is not None else None

    def chat_ids(self, project_id: int) -> list[int]:
        """The project's chats, most recently updated first."""
        with reported(self._path):
            rows = self._conn.execute(
                "SELECT id FROM chats WHERE project_id = ? ORDER BY updated_at DESC, id DESC", (project_id,)
            ).fetchall()
        return [row[0] for row in rows]

    def project_of(self, chat_id: int) -> Project | None:
        """The project the chat is in, or None (no project, or no such chat)."""
        with reported(self._path):
            row = self._conn.execute("SELECT project_id FROM chats WHERE id = ?", (chat_id,)).fetchone()
        return self.get_project(row[0]) if row is not None and row[0] is not None else None

    def sources_of(self, chat_id: int) -> dict[int, tuple[Source, ...]]:
        """The sources each message of the chat's current branch answers from, by message id: a question's own, and
        each reply's, those of the question it answers (what its [1], [2] cite)."""
        with reported(self._path):
            return sources_by_message(self._conn, chat_id)

    def _documents_by_project(self, project_id: int | None = None) -> dict[int, tuple[str, ...]]:
        sql = "SELECT project_id, path FROM project_documents"
        rows = (
            self._conn.execute(sql + " WHERE project_id = ? ORDER BY added_at, path", (project_id,))
            if project_id is not None
            else self._conn.execute(sql + " ORDER BY project_id, added_at, path")
        ).fetchall()
        found: dict[int, list[str]] = {}
        for row in rows:
            found.setdefault(row[0], []).append(row[1])
        return {key: tuple(paths) for key, paths in found.items()}

    # -- writing --------------------------------------------------------------------------------------------

    def create_project(
        self,
        name: str,
        instructions: str = "",
        target_path: str | None = None,
        draft_path: str | None = None,
        preset: str | None = None,
        documents: Sequence[str] = (),
    ) -> Project:
        """A new project, its header placed after the others."""
        name = clean_name(name)
        with self._write() as conn:
            now = time.time()
            position = conn.execute("SELECT coalesce(max(position), -1) + 1 FROM projects").fetchone()[0]
            cursor = conn.execute(
                "INSERT INTO projects (name, instructions, target_path, draft_path, preset, created_at, updated_at, "
                "position) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (name, valid_text(instructions), target_path, draft_path, preset, now, now, position),
            )
            project_id = cursor.lastrowid
            assert project_id is not None  # an INSERT's row id
            _write_documents(conn, project_id, documents)
        return self.require_project(project_id)

    def rename_project(self, project_id: int, name: str) -> Project:
        name = clean_name(name)
        with self._write() as conn:
            if conn.execute("UPDATE projects SET name = ? WHERE id = ?", (name, project_id)).rowcount == 0:
                raise NotFoundError(f"There is no project {project_id} to rename (it may have been deleted).")
        return self.require_project(project_id)

    def update_project(self, project: Project) -> Project:
        """Keep the project's name, instructions, defaults and documents as `project` has them."""
        name = clean_name(project.name)
        with self._write() as conn:
            updated = conn.execute(
                "UPDATE projects SET name = ?, instructions = ?, target_path = ?, draft_path = ?, preset = ?, "
                "updated_at = ? WHERE id = ?",
                (
                    name,
                    valid_text(project.instructions),
                    project.target_path,
                    project.draft_path,
                    project.preset,
                    time.time(),
                    project.id,
                ),
            ).rowcount
            if not updated:
                raise NotFoundError(f"There is no project {project.id} to change (it may have been deleted).")
            conn.execute("DELETE FROM project_documents WHERE project_id = ?", (project.id,))
            _write_documents(conn, project.id, project.documents)
        return self.require_project(project.id)

    def delete_project(self, project_id: int, delete_chats: bool = False) -> list[int]:
        """Delete the project; its chats are kept, in no project, unless `delete_chats`. Returns the ids of the
        chats deleted with it. A project already gone is not an error."""
        with self._write() as conn:
            gone = [
                row[0] for row in conn.execute("SELECT id FROM chats WHERE project_id = ?", (project_id,)).fetchall()
            ]
            if delete_chats:
                conn.execute("DELETE FROM chats WHERE project_id = ?", (project_id,))  # messages cascade
            # Kept chats fall back to no project by ON DELETE SET NULL; documents go by ON DELETE CASCADE.
            conn.execute("DELETE FROM projects WHERE id = ?", (project_id,))
        if not delete_chats:
            return []
        for chat_id in gone:  # after the rows: a failed delete keeps every chat whole
            delete_chat_pictures(self._pictures_beside(), chat_id)
        return gone

    def move_chat(self, chat_id: int, project_id: int | None) -> None:
        """Put the chat in the project, or (None) in none. Moving is not activity: the chat keeps its place in time."""
        with self._write() as conn:
            if (
                project_id is not None
                and conn.execute("SELECT 1 FROM projects WHERE id = ?", (project_id,)).fetchone() is None
            ):
                raise NotFoundError(f"There is no project {project_id} to move the chat to (it may have been deleted).")
            if conn.execute("UPDATE chats SET project_id = ? WHERE id = ?", (project_id, chat_id)).rowcount == 0:
                raise NotFoundError(f"There is no chat {chat_id} to move (it may have been deleted).")

    def require_project(self, project_id: int) -> Project:
        project = self.get_project(project_id)
        if project is None:
            raise NotFoundError(f"There is no project {project_id} (it may have been deleted).")
        return project


def _write_documents(conn: sqlite3.Connection, project_id: int, documents: Sequence[str]) -> None:
    now = time.time()
    kept = dict.fromkeys(valid_text(str(path)) for path in documents if str(path).strip())  # once each, in order
    conn.executemany(
        "INSERT INTO project_documents (project_id, path, added_at) VALUES (?, ?, ?)",
        [(project_id, path, now + i * 1e-6) for i, path in enumerate(kept)],
    )


def _project_from_row(row: sqlite3.Row, documents: tuple[str, ...]) -> Project:
    return Project(
        id=row["id"],
        name=row["name"],
        instructions=row["instructions"],
        target_path=row["target_path"],
        draft_path=row["draft_path"],
        preset=row["preset"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        position=row["position"],
        documents=documents,
    )
