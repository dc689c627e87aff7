"""One reader for every file a person names (mcp.json, --tools, --json-schema, attachments, chat templates,
settings): regular files only, and never more than a limit read into memory.

A path may name anything. A device (/dev/zero, /dev/urandom) reads forever, so its whole content would fill memory;
a FIFO blocks the open until some writer comes, which may be never; a folder has no content. The file is opened
with O_NONBLOCK (a FIFO's open returns at once), its kind checked on the open descriptor (no race with a rename),
and at most `limit` + 1 bytes are read, so a file that grows while it is read is still caught.
"""

from __future__ import annotations

import os
import stat

from app.common.units import format_bytes

_CHUNK = 1 << 16


class FileReadError(ValueError):
    """Why a file cannot be used, as a phrase that follows its path: "{path} {reason}"."""

    def __init__(self, path: str | os.PathLike[str], reason: str):
        super().__init__(f"{os.fspath(path)} {reason}")
        self.path = os.fspath(path)
        self.reason = reason


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "is a folder, not a file"
    if stat.S_ISFIFO(mode):
        return "is a pipe (FIFO), not a regular file"
    if stat.S_ISSOCK(mode):
        return "is a socket, not a regular file"
    return "is a device, not a regular file"


def file_problem(path: str | os.PathLike[str]) -> str | None:
    """Why `path` names no regular file (following links), as "{path} {reason}"; None when it names one. For a file
    that is opened by another reader (a model, its projector), checked first so that a FIFO never blocks it."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return f"{os.fspath(path)} does not exist"
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        return f"{os.fspath(path)} could not be read ({getattr(exc, 'strerror', None) or exc})"
    return None if stat.S_ISREG(mode) else f"{os.fspath(path)} {_kind(mode)}"


def read_bounded(path: str | os.PathLike[str], limit: int) -> bytes:
    """The content of the regular file at `path`, at most `limit` bytes. Raises FileReadError (a ValueError) with a
    phrase for a missing, unreadable, non-regular or too-large file."""
    try:
        fd = os.open(
            path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)
        )
    except FileNotFoundError:
        raise FileReadError(path, "does not exist") from None
    except IsADirectoryError:
        raise FileReadError(path, "is a folder, not a file") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise FileReadError(path, f"could not be read ({getattr(exc, 'strerror', None) or exc})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileReadError(path, _kind(info.st_mode))
        too_large = f"is larger than {format_bytes(limit)}, more than such a file ever holds"
        if info.st_size > limit:
            raise FileReadError(path, too_large)
        pieces: list[bytes] = []
        got = 0
        while got <= limit:
            piece = os.read(fd, min(_CHUNK, limit + 1 - got))
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        if got > limit:  # it grew while it was read
            raise FileReadError(path, too_large)
        return b"".join(pieces)
    except OSError as exc:
        raise FileReadError(path, f"could not be read ({exc.strerror or exc})") from None
    finally:
        os.close(fd)


def read_text_bounded(path: str | os.PathLike[str], limit: int, encoding: str = "utf-8") -> str:
    """read_bounded's bytes as text; FileReadError also for text that is not valid `encoding`."""
    data = read_bounded(path, limit)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise FileReadError(path, f"is not valid UTF-8 text (bad byte at offset {exc.start})") from None
