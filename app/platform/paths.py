"""Where SpecChat keeps its files: one place, so a pip install and the bundle share chats, settings and models.

`SPECCHAT_HOME` moves everything under one folder (tests use it so they never touch the real user folders).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterable, TypeVar

T = TypeVar("T")

APP_NAME = "SpecChat"


def _home_override() -> Path | None:
    home = os.environ.get("SPECCHAT_HOME")
    return Path(home) if home else None


def user_data_dir() -> Path:
    home = _home_override()
    if home:
        return home / "data"
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def user_config_dir() -> Path:
    home = _home_override()
    if home:
        return home / "config"
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def user_cache_dir() -> Path:
    home = _home_override()
    if home:
        return home / "cache"
    import platformdirs

    return Path(platformdirs.user_cache_dir(APP_NAME, appauthor=False))


def resolved(path: Path) -> Path:
    """The path with links resolved, so one file reached two ways counts once (the path itself if that fails)."""
    try:
        return path.resolve()
    except (OSError, ValueError):  # ValueError: a NUL in the path
        return path


def unique_by_path(items: Iterable[T], path_of: Callable[[T], Path]) -> list[T]:
    """`items` without later ones whose path resolves to an earlier one's, in order."""
    seen: set[Path] = set()
    unique: list[T] = []
    for item in items:
        key = resolved(path_of(item))
        if key not in seen:
            seen.add(key)
            unique.append(item)
    return unique


def models_dir() -> Path:
    """The app's own models folder: downloads land here and it is always scanned."""
    return user_data_dir() / "models"


def database_path() -> Path:
    return user_data_dir() / "chats.sqlite3"


def settings_path() -> Path:
    return user_config_dir() / "settings.json"
