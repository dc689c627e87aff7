"""Secrets on disk (the Hugging Face token, servers' API keys): written atomically, readable by their owner only."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional

from app.common.atomic_write import write_atomic

SECRET_FILE_MODE = 0o600
SECRET_DIR_MODE = 0o700


def clean_secret(secret: Optional[str]) -> Optional[str]:
    """A token or key as pasted or read from a file: line breaks dropped, spaces trimmed; None when nothing is left."""
    if secret is None:
        return None
    return secret.replace("\r", "").replace("\n", "").strip() or None


def write_secret(path: Path, content: str) -> None:
    """Write `content` to `path` atomically with owner-only permissions. Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=SECRET_DIR_MODE)
    write_atomic(path, content, mode=SECRET_FILE_MODE)  # owner-only from the moment the file exists
    try:
        os.chmod(path, SECRET_FILE_MODE)
    except (OSError, NotImplementedError):  # Windows has no POSIX modes; the user profile protects it
        pass
