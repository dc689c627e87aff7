"""The API server's own key (what clients must send), kept in one owner-only file, never logged."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from app.platform import paths
from app.platform.secret_file import write_secret


def key_file() -> Path:
    return paths.user_config_dir() / "api-server-key"


def key_problem(key: Optional[str]) -> Optional[str]:
    """Why `key` cannot be an API key (it travels in an HTTP header), or None."""
    if key is None:
        return None
    if not key.strip() or not key.isascii() or not key.isprintable() or " " in key:
        return "The API key must be printable ASCII text without spaces."
    return None


def saved_key() -> Optional[str]:
    try:
        key = key_file().read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return key if key and key_problem(key) is None else None


def save_key(key: Optional[str]) -> None:
    """Keep `key`; None or "" forgets it. Raises OSError, or ValueError for a key that cannot be one."""
    key = (key or "").strip() or None
    if key is None:
        try:
            key_file().unlink()
        except FileNotFoundError:
            pass
        return
    problem = key_problem(key)
    if problem:
        raise ValueError(problem)
    write_secret(key_file(), key + "\n")
