"""One versioned JSON cache file: {"version": N, ...}, read back whatever the file holds, written atomically.

A cache may be damaged, hand-edited or written by another version of SpecChat. Reading one never raises: a file
that is missing, unreadable, not JSON, nested too deep to parse, not an object or of another version reads as {}.
Entries inside are the caller's to check (`section`, and each cache's own entry check), since only it knows their
shape. Losing a cache only costs work again, so writing one is atomic but not synced, and its failure is reported
(False), never raised.
"""

from __future__ import annotations

import json
import os
from typing import Any, Mapping

from app.common.atomic_write import write_atomic

VERSION_KEY = "version"


def read_cache(path: str | os.PathLike[str], version: int) -> dict[str, Any]:
    """What the cache at `path` holds, its version key left out; {} for anything but an object of `version`."""
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError, RecursionError):  # ValueError covers bad JSON and bad UTF-8 alike
        return {}
    if not isinstance(data, dict) or data.get(VERSION_KEY) != version or isinstance(data.get(VERSION_KEY), bool):
        return {}
    return {key: value for key, value in data.items() if key != VERSION_KEY}


def section(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    """`data[name]` when it is an object, else a new empty one."""
    value = data.get(name)
    return value if isinstance(value, dict) else {}


def write_cache(path: str | os.PathLike[str], version: int, data: Mapping[str, Any]) -> bool:
    """Write {"version": version, **data} atomically; False when it could not be written."""
    try:
        write_atomic(path, json.dumps({**data, VERSION_KEY: version}), durable=False)
    except (OSError, TypeError, ValueError):  # TypeError/ValueError: a value JSON cannot hold
        return False
    return True
