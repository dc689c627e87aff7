"""Model files that crashed the engine process, remembered so they are never loaded again automatically.

A file is identified by (path, size, mtime): replacing or re-downloading it clears the verdict. The list is a small
JSON file in the user data folder, written atomically; an unreadable list is treated as empty.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from app.platform import paths
from app.common.atomic_write import write_atomic
from app.common.file_identity import file_identity


def _registry_path() -> Path:
    return paths.user_data_dir() / "unusable-models.json"


def _read() -> dict:
    try:
        data = json.loads(_registry_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def mark_unusable(path: str | os.PathLike, reason: str) -> None:
    """Remember that loading `path` crashed the engine, with `reason` for a person. Never raises."""
    identity = file_identity(path)
    if identity is None:
        return
    entries = _read()
    entries[str(path)] = {"identity": identity, "reason": reason}
    try:
        write_atomic(_registry_path(), json.dumps(entries, indent=1, ensure_ascii=False))
    except OSError:
        pass  # worst case the file is offered again, and the engine process survives it again


def unusable_reason(path: str | os.PathLike) -> Optional[str]:
    """Why `path` must not be loaded, if this very file (same size and mtime) crashed the engine before."""
    entry = _read().get(str(path))
    if not isinstance(entry, dict) or entry.get("identity") != file_identity(path):
        return None
    return str(entry.get("reason") or "it crashed the engine when it was loaded")
