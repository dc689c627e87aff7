"""Errors the store raises, each with a message that names the file and says what a person can do about it."""

from __future__ import annotations


class StoreError(Exception):
    """Base for every error the store reports to a front end (the window shows the message as it is)."""


class DatabaseTooNewError(StoreError):
    """The chat database was written by a newer SpecChat; this version refuses it rather than damage it."""


class DatabaseCorruptError(StoreError):
    """The chat database is damaged, unreadable or not a SpecChat database; it is left exactly as found."""


class NotFoundError(StoreError, LookupError):
    """A chat or message id that is not (or no longer) in the database."""
