"""A file's identity as SpecChat tells a changed file by: its size and modification time.

One copy for the window (a loaded file changed under the engine, the crash verdicts) and the engine process (a
loaded draft whose file is gone or was replaced).
"""

from __future__ import annotations

import os
from typing import Optional


def file_identity(path: str | os.PathLike) -> Optional[list]:
    """[size, mtime in ns] of a file, or None when it cannot be read: a file that changes gets a new identity."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]
