"""One atomic file write for every file SpecChat keeps (settings, caches, registries)."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Iterator, Optional


def write_atomic(path: str | os.PathLike, data: str | bytes, *, durable: bool = True, mode: int | None = None) -> None:
    """Write `data` to `path` so that a crash or a full disk leaves the old file or the new one, never half.

    The file is readable by its owner only (0o600) from its creation, unless `mode` says otherwise (Windows keeps
    its own permissions). `durable=False` skips the syncs, for caches that may be lost. Raises OSError.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    with atomic_file(path, durable=durable, mode=mode) as tmp_path:
        with open(tmp_path, "wb") as f:
            f.write(payload)
            if durable:
                f.flush()
                os.fsync(f.fileno())


@contextlib.contextmanager
def atomic_file(path: str | os.PathLike, *, durable: bool = True, mode: int | None = None) -> Iterator[Path]:
    """A temporary path to write the whole file to, for writers that take a file name (GGUFWriter): when the block
    ends without an error it becomes `path` at once; on any error it is removed and `path` is left as it was.

    The temporary file sits in the target's folder (os.replace is atomic only within one file system) and is
    created with `mode` (0o600 unless given). `durable` syncs the rename into the folder. Raises OSError.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_path = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    tmp_name: Optional[str] = tmp_path  # None once it has become `path`
    try:
        if mode is not None and hasattr(os, "fchmod"):
            os.fchmod(fd, mode)
        os.close(fd)
        yield Path(tmp_path)
        os.replace(tmp_path, path)
        tmp_name = None
        if durable:
            _fsync_dir(path.parent)
    finally:
        if tmp_name is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp_name)


def _fsync_dir(folder: Path) -> None:
    # Makes the rename itself durable on POSIX; Windows cannot open a folder for fsync, and needs no such step.
    if os.name != "posix":
        return
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
