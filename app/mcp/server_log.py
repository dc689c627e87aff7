"""What the `mcp` SDK logs about a tool server, rate-limited and in one line each, and a server's stderr, bounded.

The SDK logs every line a stdio server prints that is not JSON-RPC with `logger.exception`: a traceback each, on
stderr (Python's last-resort handler), so a server flooding stdout wrote 63 MB of tracebacks in under a minute.
Here the SDK's "mcp" logger gets a handler of its own: per server, the first FIRST_LINES records are said in one
line (the message and the error's kind; never the server's text, which may hold terminal escapes), then one line
per SUMMARY_EVERY_S says how many more were left out. The server a record is about is known from a context
variable that the host sets in each server's task (the SDK's reader tasks inherit it).

A server's stderr is kept for the sentence said when it fails: read from a pipe on a thread, only its last
STDERR_KEEP_BYTES are kept, however much it writes.
"""

from __future__ import annotations

import collections
import contextvars
import json
import logging
import os
import sys
import threading
import time
from typing import Callable, Optional, TextIO

FIRST_LINES = 3
SUMMARY_EVERY_S = 10.0
STDERR_KEEP_BYTES = 4000

serving: contextvars.ContextVar[str] = contextvars.ContextVar("serving", default="")


class _Counts:
    def __init__(self) -> None:
        self.shown = 0
        self.left_out = 0
        self.said_at = 0.0


class ServerLogHandler(logging.Handler):
    """The "mcp" logger's handler: a few lines per server, then counts. `write` takes one line (stderr's by
    default); `clock` is time.monotonic."""

    def __init__(self, write: Optional[Callable[[str], None]] = None, clock: Callable[[], float] = time.monotonic):
        super().__init__(logging.WARNING)
        self._write = write
        self._clock = clock
        self._counts: dict[str, _Counts] = {}
        self._guard = threading.Lock()

    def _say(self, line: str) -> None:
        if self._write is not None:
            self._write(line)
            return
        stream: TextIO = sys.stderr
        try:
            stream.write(line + "\n")
            stream.flush()
        except (OSError, ValueError):
            pass

    def emit(self, record: logging.LogRecord) -> None:
        server = serving.get() or "?"
        now = self._clock()
        with self._guard:
            counts = self._counts.setdefault(server, _Counts())
            if counts.shown < FIRST_LINES:
                counts.shown += 1
                counts.said_at = now
                line = _one_line(server, record)
            else:
                counts.left_out += 1
                if now - counts.said_at < SUMMARY_EVERY_S:
                    return
                line = _more(server, counts.left_out)
                counts.left_out, counts.said_at = 0, now
        self._say(line)

    def flush_server(self, server: str) -> None:
        """Says what is still left out of `server`'s lines (when it stops), and starts its count again."""
        with self._guard:
            counts = self._counts.pop(server, None)
        if counts is not None and counts.left_out:
            self._say(_more(server, counts.left_out))


def _one_line(server: str, record: logging.LogRecord) -> str:
    try:
        message = record.getMessage()
    except Exception:  # a record whose arguments do not fit its format
        message = str(record.msg)
    kind = record.exc_info[0].__name__ if record.exc_info and record.exc_info[0] else ""
    return f"[tool server {json.dumps(server)}: {message[:200]}{f' ({kind})' if kind else ''}]"


def _more(server: str, count: int) -> str:
    return f"[tool server {json.dumps(server)}: … {count:,} more log lines like these were left out]"


_handler: Optional[ServerLogHandler] = None


def server_log() -> ServerLogHandler:
    """The one handler on the SDK's "mcp" logger, installed on first use (records no longer reach the root logger
    nor the last-resort handler, which prints tracebacks)."""
    global _handler
    if _handler is None:
        _handler = ServerLogHandler()
        logger = logging.getLogger("mcp")
        logger.addHandler(_handler)
        logger.propagate = False
    return _handler


class StderrTail:
    """A pipe for a server's stderr, read on a thread that keeps only the last STDERR_KEEP_BYTES. `file` is the
    write end to hand the server (a text file object, as the SDK wants); `close()` closes this process's copy of it,
    so the reader ends once the server's copies close too."""

    def __init__(self) -> None:
        read_fd, write_fd = os.pipe()
        self.pipe_id = f"pipe:[{os.fstat(write_fd).st_ino}]"  # as /proc/PID/fd/2 names it in the server
        self.file: TextIO = os.fdopen(write_fd, "w", encoding="utf-8", errors="replace")
        self._tail: collections.deque[bytes] = collections.deque()
        self._kept = 0
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._read, args=(read_fd,), name="tool server stderr", daemon=True)
        self._thread.start()

    def _read(self, fd: int) -> None:
        with os.fdopen(fd, "rb", buffering=0) as pipe:
            while True:
                try:
                    piece = pipe.read(1 << 16)
                except OSError:
                    return
                if not piece:
                    return
                with self._lock:
                    self._tail.append(piece)
                    self._kept += len(piece)
                    while self._kept - len(self._tail[0]) >= STDERR_KEEP_BYTES:
                        self._kept -= len(self._tail.popleft())

    def text(self) -> str:
        """The last STDERR_KEEP_BYTES the server wrote (fewer where a line was cut), as text."""
        with self._lock:
            data = b"".join(self._tail)[-STDERR_KEEP_BYTES:]
        return data.decode("utf-8", "replace")

    def close(self) -> None:
        try:
            self.file.close()
        except OSError:
            pass

    def wait(self, timeout_s: float) -> None:
        """Until the reader has read all (the server's copies closed), or `timeout_s`."""
        self._thread.join(timeout_s)
