"""Secrets on disk (the Hugging Face token, servers' API keys): written atomically, readable by their owner only."""

from __future__ import annotations

import os
from pathlib import Path

SECRET_FILE_MODE = 0o600
SECRET_DIR_MODE = 0o700


def write_secret(path: Path, content: str) -> None:
    """Write `content` to `path` atomically with owner-only permissions. Raises OSError."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=SECRET_DIR_MODE)
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(str(tmp), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, SECRET_FILE_MODE)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(content)
    os.replace(tmp, path)
    try:
        os.chmod(path, SECRET_FILE_MODE)
    except (OSError, NotImplementedError):  # Windows has no POSIX modes; the user profile protects it
        pass
