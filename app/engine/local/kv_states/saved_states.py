"""Long conversations' KV states on disk, so a chat reopened after a restart is not read again from its start.

One folder per loaded model file and load settings (path, size, modification time, context size, llama.cpp
version: a state is only valid for the exact model and build it was taken with), one file per conversation:

    SPECKV1\\n  {"session", "n_tokens", "crc32"} as one JSON line  int32 tokens  the llama.cpp sequence state

Our own file rather than llama_state_seq_save_file's: its tokens can be read without the state behind them (to pick
the longest match among many files), and a checksum tells a damaged file, which is then ignored and removed with a
note: a state restored from damaged bytes would change the reply without a sign. The folder is bounded in size,
the least recently used file removed first. `forget_saved_states` needs no loaded model: the window calls it when
a chat is deleted.

A SavedStates is used from the engine process's main thread only.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence, TypeGuard

import numpy as np

from app.common.atomic_write import write_atomic
from app.common.units import format_bytes
from app.platform.paths import user_data_dir

MAGIC = b"SPECKV1\n"
# Conversations shorter than this are not written to disk. Reading a state back costs milliseconds where reading its
# tokens again on a CPU takes seconds (docs/performance.md, "Conversation cache"), so the bound is low: it only
# spares the disk one file per short question.
DISK_MIN_TOKENS = 256
# The disk budget per model and load settings, by default (LoadSettings.saved_states_mib sets another).
DISK_DEFAULT = 2 << 30
# The leading tokens that name one conversation of a session (API clients all share the session "api").
NAME_TOKENS = 128


def saved_states_line() -> str:
    """Settings' line: how many long conversations are saved on disk, the space they take and the bound."""
    files = list(states_root().glob("*/*.kv")) if states_root().is_dir() else []
    used = 0
    for file in files:
        with contextlib.suppress(OSError):
            used += file.stat().st_size
    return (
        f"Long chats (over {DISK_MIN_TOKENS} tokens) saved on disk: {len(files)}, {format_bytes(used)} of "
        f"{format_bytes(DISK_DEFAULT)} per model; deleting a chat deletes them."
    )


class DamagedState(Exception):
    """A saved state that cannot be used (truncated, altered, or of another format)."""


def states_root() -> Path:
    return user_data_dir() / "conversation-states"


def _session_part(session: str) -> str:
    return hashlib.sha1(session.encode("utf-8")).hexdigest()[:16]


def model_folder(path: Path, n_ctx: int) -> Path:
    """The folder of one model file's states under these load settings."""
    import llama_cpp

    st = path.stat()
    identity = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}|ctx{n_ctx}|{llama_cpp.__version__}"
    return states_root() / hashlib.sha1(identity.encode("utf-8")).hexdigest()[:20]


def forget_saved_states(session: str) -> int:
    """Delete every saved state of `session` (a deleted chat), for every model; how many files went."""
    root = states_root()
    removed = 0
    if not root.is_dir():
        return 0
    for file in root.glob(f"*/*-{_session_part(session)}-*.kv"):
        with contextlib.suppress(OSError):
            file.unlink()
            removed += 1
    return removed


@dataclass
class SavedHeader:
    path: Path
    session: str
    tokens: list[int]
    crc32: int
    size: int
    mtime_ns: int


def _read_header(path: Path) -> SavedHeader:
    """The session and tokens of a saved state, without reading the state. Raises DamagedState, OSError.

    Every field is checked before it is used: a header is bytes on a disk, and a token count of 10^12, a negative
    one or a checksum that is text would otherwise fail every request of the conversation, the file kept."""
    st = path.stat()
    with open(path, "rb") as f:
        if f.read(len(MAGIC)) != MAGIC:
            raise DamagedState("not a saved conversation state")
        line = f.readline(4096)
        try:
            head = json.loads(line)
        except (ValueError, RecursionError) as exc:
            raise DamagedState(f"unreadable header ({exc.__class__.__name__})") from None
        if not isinstance(head, dict):
            raise DamagedState("unreadable header (not an object)")
        n_tokens, crc, session = head.get("n_tokens"), head.get("crc32"), head.get("session")
        if not isinstance(session, str) or not _whole(crc) or not 0 <= crc < 1 << 32:
            raise DamagedState("unreadable header (its session or checksum)")
        # The tokens must fit in what follows the header, with a state after them.
        if not _whole(n_tokens) or not 0 < n_tokens < (st.st_size - f.tell()) // 4:
            raise DamagedState("its token count does not fit the file")
        raw = f.read(4 * n_tokens)
        if len(raw) != 4 * n_tokens:
            raise DamagedState("its tokens are cut short")
    return SavedHeader(path, session, np.frombuffer(raw, dtype="<i4").tolist(), crc, st.st_size, st.st_mtime_ns)


def _whole(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


class SavedStates:
    """The saved states of one model and its load settings, within `budget_bytes` on disk (LRU)."""

    def __init__(self, folder: Path, budget_bytes: int):
        self.folder = folder
        self.budget_bytes = budget_bytes
        self._headers: dict[Path, SavedHeader] = {}  # read once per file version (path + mtime)
        self.notice = ""  # what went wrong with a file, said once by the engine, then cleared

    def _scan(self, scope: str = "*") -> list[SavedHeader]:
        found: list[SavedHeader] = []
        if not self.folder.is_dir():
            return found
        for file in self.folder.glob(f"{scope}-*.kv"):
            try:
                known = self._header(file)
            except DamagedState as exc:
                self._set_aside(file, str(exc))
                continue
            except OSError:
                continue
            found.append(known)
        return found

    def _set_aside(self, file: Path, why: str) -> None:
        self.notice = f"A saved conversation state was damaged and is ignored ({why}); the chat is read again."
        self._headers.pop(file, None)
        with contextlib.suppress(OSError):
            file.unlink()

    def best(self, tokens: Sequence[int], scope: str) -> tuple[Optional[SavedHeader], int]:
        """The saved state of `scope` sharing the longest prefix with `tokens`, and how long that prefix is."""
        best, best_n = None, 0
        for header in self._scan(scope):
            n = shared_prefix(header.tokens, tokens)
            if n > best_n:
                best, best_n = header, n
        return best, best_n

    def load(self, header: SavedHeader) -> Optional[bytes]:
        """The state behind a header; None (and a notice) when the file is damaged or gone."""
        try:
            with open(header.path, "rb") as f:
                f.seek(len(MAGIC))
                f.readline(4096)
                f.seek(4 * len(header.tokens), os.SEEK_CUR)
                state = f.read()
        except OSError:
            return None
        if not state or zlib.crc32(state) != header.crc32:
            self._set_aside(header.path, "its checksum does not match")
            return None
        with contextlib.suppress(OSError, DamagedState):
            os.utime(header.path)  # recently used: evicted last
            self._headers[header.path] = _read_header(header.path)
        return state

    def save(self, scope: str, session: str, tokens: Sequence[int], state: bytes) -> Optional[Path]:
        """Keep the state of a conversation, replacing its earlier one; then stay within the budget. The file
        written, or None when nothing was."""
        if len(tokens) < DISK_MIN_TOKENS or not state or len(state) > self.budget_bytes:
            return None
        opening = hashlib.sha1(np.asarray(tokens[:NAME_TOKENS], dtype="<i4").tobytes()).hexdigest()[:12]
        name = f"{scope}-{_session_part(session)}-{opening}.kv"
        head = json.dumps({"session": session, "n_tokens": len(tokens), "crc32": zlib.crc32(state)}).encode()
        payload = b"".join((MAGIC, head, b"\n", np.asarray(tokens, dtype="<i4").tobytes(), state))
        try:
            write_atomic(self.folder / name, payload, durable=False)
        except OSError as exc:
            self.notice = f"Could not save the conversation's state to disk ({exc}); it stays in memory."
            return None
        self._evict()
        return self.folder / name

    def detach(self, path: Path, tokens: Sequence[int]) -> bool:
        """Rename the file `save` wrote, so that the conversation's next save (a branch of it, such as an edited
        message) writes a file of its own instead of replacing this one. False,
        and nothing renamed, when the file no longer holds the state of exactly `tokens` (another conversation of
        the same session and opening replaced it, or the budget evicted it)."""
        try:
            if self._header(path).tokens != list(tokens):
                return False
            digest = hashlib.sha1(np.asarray(tokens, dtype="<i4").tobytes()).hexdigest()[:12]
            os.replace(path, path.with_name(f"{path.stem}-{digest}.kv"))
        except (OSError, DamagedState):
            return False
        self._headers.pop(path, None)
        return True

    def _header(self, file: Path) -> SavedHeader:
        """A file's header, read once per version of the file. Raises DamagedState, OSError."""
        known = self._headers.get(file)
        if known is None or known.mtime_ns != file.stat().st_mtime_ns:
            known = self._headers[file] = _read_header(file)
        return known

    def _evict(self) -> None:
        headers = sorted(self._scan(), key=lambda h: h.mtime_ns)
        total = sum(h.size for h in headers)
        while headers and total > self.budget_bytes:
            oldest = headers.pop(0)
            with contextlib.suppress(OSError):
                oldest.path.unlink()
            self._headers.pop(oldest.path, None)
            total -= oldest.size

    def forget(self, session: str) -> None:
        for file in self.folder.glob(f"*-{_session_part(session)}-*.kv"):
            with contextlib.suppress(OSError):
                file.unlink()
            self._headers.pop(file, None)

    def used_bytes(self) -> int:
        return sum(h.size for h in self._scan())


def shared_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the common prefix of two token lists."""
    limit = min(len(a), len(b))
    if list(a[:limit]) == list(b[:limit]):
        return limit
    n = 0
    while a[n] == b[n]:
        n += 1
    return n
