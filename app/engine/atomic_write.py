"""Writing a file so that readers see the old content or the new, never half of it."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Union


def write_atomic(path: Union[str, Path], data: Union[bytes, str]) -> None:
    """Write `data` (str as UTF-8) to a temporary file beside `path`, then rename it over `path`.

    The temporary file is in the same folder because a rename is atomic only within one file system.
    Raises OSError; the old file is then untouched and no temporary file is left behind.
    """
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(payload)
        os.chmod(tmp_name, 0o644)  # mkstemp makes it private; these are ordinary files
        os.replace(tmp_name, path)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise
