"""Persistence: the chat history (SQLite) and the app settings (JSON). Plain Python, no Qt."""

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
