"""Chats and their messages, kept in the SQLite chat database.

Every write is one transaction committed before the method returns, so a crash (or the user killing the app
mid-reply) loses at most the reply still being generated, never a message that was already added.

A reply's provenance (where each token came from, its speculation rounds, a comparison with plain decoding) is
stored with its message as one compact JSON document, not a row per token (app.store.provenance_doc).
"""

from __future__ import annotations

import contextlib
import logging
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from app.engine.events import GenerationStats
from app.platform import paths
from app.store.attachments import (
    Attachment,
    Picture,
    PictureFile,
    chat_folder,
    decode_pictures,
    delete_chat_pictures,
    encode_attachments,
    picture_entries,
    with_attachments,
    write_pictures,
)
from app.store.provenance import RoundRecord
from app.store.tool_calls import ToolCallRecord, encode_tool_calls
from app.store.projects.sources import Source, encode_sources
from app.common.text import valid_text
from app.store import branches
from app.store.branches import Versions
from app.store.db import chat_rows_matching, open_for_chats, reported, transaction
from app.store.projects import ProjectStore
from app.store.errors import NotFoundError, StoreError
from app.store.provenance_doc import (
    StoredProvenance,
    decode_provenance,
    encode_provenance,
)
from app.store.records import (
    DEFAULT_TITLE,
    ROLES,
    Chat,
    ChatSettings,
    Message,
    Role,
    auto_title,
    chat_from_row,
    decode_stats,
    encode_reasoning,
    encode_stats,
    message_from_row,
    provenance_fields,
    reasoning_fields,
    row_attachments,
    row_pictures,
    row_tool_calls,
    settings_json,
    spelled_by,
)

log = logging.getLogger(__name__)


class ChatStore:
    """The chat history: chats, their settings and messages, in one SQLite database.

    Thread: the GUI thread only (the one that created the store). sqlite3 enforces this and raises if another
    thread calls in; the engine process hands finished replies to the GUI, which stores them.

    Every method commits before it returns. Errors are StoreError (DatabaseCorruptError, DatabaseTooNewError,
    NotFoundError) with a message the window can show as it is.
    """

    def __init__(self, path: Path | None = None, check_pages: bool = True):
        self.path = Path(path) if path is not None else paths.database_path()
        self._conn = open_for_chats(self.path, check_pages)
        # The user's database when this store is a read-only session copy of it (the window says so).
        self.copy_of: Path | None = None
        self.projects = ProjectStore(self._conn, self.path, lambda: self.pictures_beside)

    @property
    def pictures_beside(self) -> Path:
        """The database the chats' picture folders lie beside: the user's, also for a session copy of it."""
        return self.copy_of or self.path

    # -- lifetime --------------------------------------------------------------------------------------------

    def close(self) -> None:
        self._conn.close()

    def __enter__(self) -> ChatStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _errors(self) -> contextlib.AbstractContextManager[None]:
        return reported(self.path)

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._errors(), transaction(self._conn) as conn:
            yield conn

    def _bump_time(self, conn: sqlite3.Connection) -> float:
        # Strictly newer than every chat, so the chat just touched sorts first even when the clock is coarse
        # (Windows) or was set back.
        newest = conn.execute("SELECT max(updated_at) FROM chats").fetchone()[0]
        now = time.time()
        return now if newest is None or now > newest else newest + 0.001

    # -- chats -----------------------------------------------------------------------------------------------

    def create_chat(self, title: str = DEFAULT_TITLE, settings: ChatSettings | None = None) -> Chat:
        settings = settings if settings is not None else ChatSettings()
        title = valid_text(title)
        with self._write() as conn:
            now = self._bump_time(conn)
            cursor = conn.execute(
                "INSERT INTO chats (title, created_at, updated_at, settings) VALUES (?, ?, ?, ?)",
                (title, now, now, settings_json(settings)),
            )
            chat_id = cursor.lastrowid
            assert chat_id is not None  # an INSERT's row id
        # A copy, so the caller editing its settings object later does not silently diverge from the database.
        stored = ChatSettings.from_dict(settings.to_dict())
        return Chat(id=chat_id, title=title, created_at=now, updated_at=now, settings=stored)

    def list_chats(self, search: str = "", include_reasoning: bool = False) -> list[Chat]:
        """All chats, most recently updated first; `search` keeps those whose title or any message contains it,
        in its answer (its text) or, with `include_reasoning`, in a reply's thinking too."""
        with self._errors():
            rows = chat_rows_matching(self._conn, search, include_reasoning)
        return [chat_from_row(row) for row in rows]

    def get_chat(self, chat_id: int) -> Chat | None:
        """The chat, or None if there is no such chat (deleted, say)."""
        with self._errors():
            row = self._conn.execute("SELECT * FROM chats WHERE id = ?", (chat_id,)).fetchone()
        return chat_from_row(row) if row is not None else None

    def _require_chat(self, chat_id: int) -> Chat:
        chat = self.get_chat(chat_id)
        if chat is None:
            raise NotFoundError(f"There is no chat {chat_id} (it may have been deleted).")
        return chat

    def rename_chat(self, chat_id: int, title: str) -> Chat:
        title = valid_text(title)
        with self._write() as conn:
            # Renaming is not activity: the chat keeps its place in the list.
            if conn.execute("UPDATE chats SET title = ? WHERE id = ?", (title, chat_id)).rowcount == 0:
                raise NotFoundError(f"There is no chat {chat_id} to rename (it may have been deleted).")
        return self._require_chat(chat_id)

    def update_settings(self, chat_id: int, settings: ChatSettings) -> Chat:
        with self._write() as conn:
            cursor = conn.execute("UPDATE chats SET settings = ? WHERE id = ?", (settings_json(settings), chat_id))
            if cursor.rowcount == 0:
                raise NotFoundError(f"There is no chat {chat_id} to change (it may have been deleted).")
        return self._require_chat(chat_id)

    def delete_chat(self, chat_id: int) -> None:
        """Delete the chat and all its messages. Deleting a chat that is already gone is not an error."""
        with self._write() as conn:
            conn.execute("DELETE FROM chats WHERE id = ?", (chat_id,))  # messages go by ON DELETE CASCADE
        delete_chat_pictures(self.pictures_beside, chat_id)  # after the rows: a failed delete keeps the chat whole

    # -- messages --------------------------------------------------------------------------------------------

    def add_message(
        self,
        chat_id: int,
        role: Role,
        content: str,
        stats: GenerationStats | None = None,
        tokens: list[tuple[str, str]] | None = None,
        target_name: str | None = None,
        draft_name: str | None = None,
        token_rounds: list[int] | None = None,
        rounds: list[RoundRecord] | None = None,
        attachments: tuple[Attachment, ...] | list[Attachment] = (),
        reasoning: str = "",
        reasoning_tokens: list[tuple[str, str]] | None = None,
        reasoning_token_rounds: list[int] | None = None,
        pictures: tuple[Picture, ...] | list[Picture] = (),
        sources: tuple[Source, ...] = (),
    ) -> Message:
        """Append a message and commit it at once. The first user message of a "New chat" names the chat.

        `tokens` are (text, origin) per kept token of the answer, `token_rounds` each token's index into `rounds`
        (-1: none); `reasoning` is a reply's thinking, its tokens kept the same way; `attachments` are files sent
        with a user message (app.store.attachments), `pictures` the pictures sent with it, written as files into
        the chat's folder (app.store.attachments); `sources` the documents or passages a question was sent with.
        """
        if role not in ROLES:
            raise ValueError(f"role must be one of {', '.join(ROLES)}, not {role!r}")
        # Text a server or model wrote may hold lone surrogates, which SQLite cannot store (common/text.py).
        content = valid_text(content)
        target_name = valid_text(target_name) if target_name is not None else None
        draft_name = valid_text(draft_name) if draft_name is not None else None
        # Encode before the transaction: a bad token, round or stats value raises without touching the database.
        tokens_json = encode_provenance(StoredProvenance(tokens, token_rounds, rounds))
        reasoning_text, reasoning_json = encode_reasoning(reasoning, reasoning_tokens, reasoning_token_rounds, rounds)
        stats_json = encode_stats(stats)
        attachments_json = encode_attachments(attachments, picture_entries(pictures))
        with self._write() as conn:
            row = conn.execute("SELECT title FROM chats WHERE id = ?", (chat_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"There is no chat {chat_id} to add a message to (it may have been deleted).")
            now = self._bump_time(conn)
            cursor = conn.execute(
                """
                INSERT INTO messages (chat_id, role, content, created_at, stats, tokens, target_name, draft_name,
                                      attachments, reasoning, reasoning_tokens, sources)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                (
                    chat_id,
                    role,
                    content,
                    now,
                    stats_json,
                    tokens_json,
                    target_name,
                    draft_name,
                    attachments_json,
                    reasoning_text,
                    reasoning_json,
                    encode_sources(sources),
                ),
            )
            message_id = cursor.lastrowid
            assert message_id is not None  # an INSERT's row id
            title = row["title"]
            if role == "user" and title == DEFAULT_TITLE:  # a "New chat" is named by its first message
                title = auto_title(content.strip() or " ".join(a.name for a in [*attachments, *pictures]))
            conn.execute("UPDATE chats SET updated_at = ?, title = ? WHERE id = ?", (now, title, chat_id))
            # Inside the transaction: when the files cannot be written, the message is not stored either.
            self._write_pictures(chat_id, pictures)
        return Message(
            id=message_id,
            chat_id=chat_id,
            role=role,
            content=content,
            created_at=now,
            stats=decode_stats(stats_json),
            target_name=target_name,
            draft_name=draft_name,
            attachments=tuple(attachments),
            pictures=decode_pictures(attachments_json, chat_folder(self.pictures_beside, chat_id)),
            sources=tuple(sources),
            **provenance_fields(decode_provenance(tokens_json)),
            **reasoning_fields(reasoning_text, reasoning_json, len(rounds or []), None),
        )

    def _write_pictures(self, chat_id: int, pictures: tuple[Picture, ...] | list[Picture]) -> None:
        folder = chat_folder(self.pictures_beside, chat_id)
        try:
            write_pictures(folder, pictures)
        except OSError as e:
            raise StoreError(f"The pictures could not be saved in {folder}: {e.strerror or e}.") from e

    def messages(self, chat_id: int, *, before_id: int | None = None, limit: int | None = None) -> list[Message]:
        """The chat's messages, oldest first (an unknown chat has none); with `limit`, only the newest `limit` of
        those older than `before_id` (a page of a long chat, for showing it from its end)."""
        with self._errors():
            rows = self._conn.execute(
                "SELECT * FROM messages WHERE chat_id = ? AND id < ? ORDER BY id DESC LIMIT ?",
                (chat_id, before_id if before_id is not None else 2**62, limit if limit is not None else -1),
            ).fetchall()
        return [message_from_row(row, self.pictures_beside) for row in reversed(rows)]

    def message_texts(self, chat_id: int) -> list[tuple[int, str, str]]:
        """(id, role, text) of the chat's messages, oldest first: what a prompt needs, without the provenance
        and stats that make whole messages slow to read for a long chat. The text is what the model reads: the
        content, then a message's attachments as fenced blocks, so a regenerated reply sees them again."""
        with self._errors():
            rows = self._conn.execute(
                "SELECT id, role, content, attachments FROM messages WHERE chat_id = ? ORDER BY id", (chat_id,)
            ).fetchall()
        return [
            (
                row["id"],
                row["role"],
                with_attachments(row["content"], row_attachments(row)) if row["attachments"] else row["content"],
            )
            for row in rows
        ]

    def pictures_of(self, chat_id: int) -> dict[int, tuple[PictureFile, ...]]:
        """The pictures of the chat's messages that have any, by message id."""
        with self._errors():
            rows = self._conn.execute(
                "SELECT id, chat_id, attachments FROM messages WHERE chat_id = ? AND "
                "attachments LIKE '%\"picture\"%' ORDER BY id",
                (chat_id,),
            ).fetchall()
        found = {row["id"]: row_pictures(row, self.pictures_beside) for row in rows}
        return {message_id: pictures for message_id, pictures in found.items() if pictures}

    def reasoning_texts(self, chat_id: int) -> dict[int, str]:
        """The thinking of the chat's replies that have some, by message id (what a prompt sends back with them)."""
        with self._errors():
            rows = self._conn.execute(
                "SELECT id, reasoning FROM messages WHERE chat_id = ? AND reasoning IS NOT NULL AND reasoning != ''",
                (chat_id,),
            ).fetchall()
        return {row["id"]: row["reasoning"] for row in rows}

    def tool_calls_of(self, chat_id: int) -> dict[int, tuple[ToolCallRecord, ...]]:
        """The tool calls of the chat's replies that made some, by message id (what a prompt sends back with them)."""
        with self._errors():
            rows = self._conn.execute(
                "SELECT id, tool_calls FROM messages WHERE chat_id = ? AND tool_calls IS NOT NULL",
                (chat_id,),
            ).fetchall()
        return {row["id"]: calls for row in rows if (calls := row_tool_calls(row))}

    def set_tool_calls(self, message_id: int, calls: tuple[ToolCallRecord, ...] | list[ToolCallRecord]) -> None:
        """Keep a reply's tool calls as they stand (asked, answered, run): each change is stored at once, so a
        restart shows what was called and what it returned."""
        with self._write() as conn:
            updated = conn.execute(
                "UPDATE messages SET tool_calls = ? WHERE id = ?", (encode_tool_calls(calls), message_id)
            ).rowcount
            if not updated:
                raise NotFoundError(
                    f"There is no message {message_id} to keep tool calls with (it may have been deleted)."
                )

    def get_message(self, message_id: int) -> Message | None:
        with self._errors():
            row = self._conn.execute("SELECT * FROM messages WHERE id = ?", (message_id,)).fetchone()
        return message_from_row(row, self.pictures_beside) if row is not None else None

    def delete_messages_from(self, chat_id: int, message_id: int) -> int:
        """Remove the message and every later one in the chat (regenerate, edit-and-resend); returns how many."""
        with self._write() as conn:
            row = conn.execute("SELECT chat_id FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None or row["chat_id"] != chat_id:
                raise NotFoundError(f"There is no message {message_id} in chat {chat_id} (it may have been deleted).")
            # Ids only grow (AUTOINCREMENT), so "later in the chat" is "larger id".
            gone = [
                r[0]
                for r in conn.execute("SELECT id FROM messages WHERE chat_id = ? AND id >= ?", (chat_id, message_id))
            ]
            conn.execute("DELETE FROM messages WHERE chat_id = ? AND id >= ?", (chat_id, message_id))
            branches.forget_after(conn, chat_id, gone)
            branches.show_another(conn, chat_id, branches.fork_of(conn, chat_id, message_id))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (self._bump_time(conn), chat_id))
        return len(gone)

    # -- branches (app.store.branches) ----------------------------------------------------------------------

    def branch_from(self, chat_id: int, message_id: int) -> int:
        """Keep the message and every later one as a version of their own, off the current branch (Regenerate,
        Edit): the chat then ends before `message_id`, ready for the new version. Returns how many were kept."""
        with self._write() as conn:
            row = conn.execute("SELECT chat_id FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None or row["chat_id"] != chat_id:
                raise NotFoundError(f"There is no message {message_id} in chat {chat_id} (it may have been deleted).")
            moved = branches.set_aside(conn, chat_id, message_id)
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (self._bump_time(conn), chat_id))
        return moved

    def versions(self, chat_id: int) -> dict[int, Versions]:
        """The versions of each forked message of the chat's current branch, by message id."""
        with self._errors():
            return branches.versions(self._conn, chat_id)

    def switch_version(self, chat_id: int, message_id: int, version_start: int) -> bool:
        """Make another version current in place of the one starting at `message_id`; the choice is the chat's
        (it opens on it next time). False when there is no such version."""
        with self._write() as conn:
            return branches.switch(conn, chat_id, message_id, version_start)

    def update_reply(
        self,
        message_id: int,
        content: str,
        stats: GenerationStats | None = None,
        tokens: list[tuple[str, str]] | None = None,
        token_rounds: list[int] | None = None,
        rounds: list[RoundRecord] | None = None,
        reasoning: str = "",
        reasoning_tokens: list[tuple[str, str]] | None = None,
        reasoning_token_rounds: list[int] | None = None,
    ) -> None:
        """Replace a streaming reply's text, thinking, stats and provenance in one commit (saved while it
        streams). A comparison with plain decoding is dropped: it compared the text being replaced."""
        content = valid_text(content)
        tokens_json = encode_provenance(StoredProvenance(tokens, token_rounds, rounds))
        reasoning_text, reasoning_json = encode_reasoning(reasoning, reasoning_tokens, reasoning_token_rounds, rounds)
        stats_json = encode_stats(stats)
        with self._write() as conn:
            updated = conn.execute(
                "UPDATE messages SET content = ?, stats = ?, tokens = ?, reasoning = ?, reasoning_tokens = ? "
                "WHERE id = ?",
                (content, stats_json, tokens_json, reasoning_text, reasoning_json, message_id),
            ).rowcount
            if not updated:
                raise NotFoundError(f"There is no message {message_id} to update (it may have been deleted).")

    def update_message_content(self, message_id: int, content: str) -> Message:
        """Replace a message's text. Provenance that no longer spells the text (tokens, rounds and the comparison
        with plain decoding) is dropped with it."""
        content = valid_text(content)
        with self._write() as conn:
            row = conn.execute("SELECT chat_id, content, tokens FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"There is no message {message_id} to edit (it may have been deleted).")
            tokens_json = row["tokens"]
            if tokens_json is not None and content != row["content"] and spelled_by(tokens_json) != content:
                # Highlighting would mark spans of text that is no longer there, and rounds describe that text.
                tokens_json = None
            conn.execute("UPDATE messages SET content = ?, tokens = ? WHERE id = ?", (content, tokens_json, message_id))
            conn.execute("UPDATE chats SET updated_at = ? WHERE id = ?", (self._bump_time(conn), row["chat_id"]))
        message = self.get_message(message_id)
        assert message is not None
        return message

    def set_comparison(self, message_id: int, data: dict | None) -> Message:
        """Keep (or with None, forget) the reply re-run without speculation, with the reply's provenance."""
        if data is not None and not isinstance(data, dict):
            raise TypeError(f"comparison must be a dict, not {type(data).__name__}")
        with self._write() as conn:
            row = conn.execute("SELECT tokens FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None:
                raise NotFoundError(f"There is no message {message_id} to compare (it may have been deleted).")
            try:
                provenance = decode_provenance(row["tokens"])
            except (ValueError, TypeError, KeyError):
                # Unreadable already (the message shows without it); the comparison is still worth keeping.
                log.warning("message %s: token provenance unreadable, replaced by the comparison", message_id)
                provenance = StoredProvenance()
            provenance.comparison = data
            conn.execute("UPDATE messages SET tokens = ? WHERE id = ?", (encode_provenance(provenance), message_id))
        message = self.get_message(message_id)
        assert message is not None
        return message
