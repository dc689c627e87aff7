"""Persistence: the chat history (SQLite) and the app settings (JSON). Plain Python, no Qt.

- _fields.py: Reading dataclass records back from JSON written by this or another version of SpecChat.
- attachments.py: Files and pictures attached to a message: read with limits, stored with it (pictures as files per chat).
- branches.py: Branches of a chat: the versions Regenerate and Edit leave behind, and moving between them.
- chats.py: Chats and their messages, kept in the SQLite chat database.
- db.py: Opening the chat database: one SQLite file, WAL journal, foreign keys on, schema versioned in `user_version`; its search.
- errors.py: Errors the store raises, each with a message that names the file and says what a person can do about it.
- model_defaults.py: Per-model defaults: what one model file loads and answers with, whatever the app-wide settings say.
- presets.py: Presets: named sets of a chat's system prompt, sampling and draft settings, chosen per chat.
- projects/: Projects: folders of chats sharing instructions, a default model, draft and preset, and documents.
- provenance.py: What a reply's provenance holds, as the store, the window, export and the CLI share it (no engine, no Qt).
- provenance_doc.py: A reply's provenance as the one compact JSON document stored with its message (the `tokens` column).
- records.py: The chat store's records: a chat, its settings and its messages, and how each is written into its row and read back.
- schema/: The chat database's schema: one migration step per version, append only.
- salvage.py: Copying what can still be read out of a damaged chat database into a fresh one.
- settings.py: Application settings: one JSON file, read forgivingly and written atomically.
- tool_calls.py: A reply's tool calls and their results, stored with the reply so a chat keeps them.
- unusable_models.py: Model files that crashed the engine process, remembered so they are never loaded again automatically.
"""

from __future__ import annotations

from app.store._fields import from_dict as record_from_dict
from app.store.chats import ChatStore
from app.store.db import SCHEMA_VERSION, open_database, set_aside_database
from app.store.errors import DatabaseCorruptError, DatabaseTooNewError, NotFoundError, StoreError
from app.store.records import DEFAULT_TITLE, Chat, ChatSettings, Message, auto_title
from app.store.salvage import SalvageReport, salvage_database
from app.store.settings import AppSettings, load_settings, save_settings

__all__ = [
    "DEFAULT_TITLE",
    "SCHEMA_VERSION",
    "AppSettings",
    "Chat",
    "ChatSettings",
    "ChatStore",
    "DatabaseCorruptError",
    "DatabaseTooNewError",
    "Message",
    "NotFoundError",
    "SalvageReport",
    "StoreError",
    "auto_title",
    "load_settings",
    "open_database",
    "record_from_dict",
    "salvage_database",
    "save_settings",
    "set_aside_database",
]
