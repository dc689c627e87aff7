"""The compatibility checks' cache: per-file facts and per-pair answers, keyed by (path, size, mtime) of the
files, in memory and in a JSON file in the user cache folder, so a library of many models is sorted instantly the
second time and a changed file is checked again.
"""

from __future__ import annotations

import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from app.common.json_cache import read_cache, section, write_cache
from app.engine.errors import ModelFileError
from app.engine.gguf.info import inspect_gguf
from app.platform.paths import user_cache_dir

CACHE_FILE_NAME = "draft-compatibility.json"
_CACHE_VERSION = 2  # 2: facts include the header checks of app.engine.gguf.checks
_MAX_CACHED_PAIRS = 20000

# suggest_drafts: a draft at most this fraction of the target's parameters is worth speculating with, and one
# around IDEAL_DRAFT_RATIO (between 1/10 and 1/4) balances acceptance against the draft's own cost.


@dataclass(frozen=True)
class VocabFacts:
    """What the rules need from one file, small enough to cache."""

    vocab_type: str
    vocab_size: int
    add_bos: bool
    bos_id: Optional[int]
    add_eos: bool
    eos_id: Optional[int]
    tokens_digest: str
    parameter_count: int
    usable: bool
    problem: str


FileKey = tuple[str, int, int]


def file_key(path: Path) -> FileKey:
    """(resolved path, size, mtime_ns): what identifies a file's content for the cache."""
    try:
        stat = os.stat(path)
    except FileNotFoundError:
        raise ModelFileError(f"{path}: file not found") from None
    except OSError as exc:
        raise ModelFileError(f"{path}: cannot read the file ({exc})") from None
    return (str(Path(path).resolve()), stat.st_size, stat.st_mtime_ns)


def _key_text(key: FileKey) -> str:
    return f"{key[0]}\x1f{key[1]}\x1f{key[2]}"


class CompatCache:
    """Per-file facts and per-pair answers, in memory and in one JSON file. Safe to use from any thread."""

    def __init__(self, path: Optional[Path]):
        self.path = path
        self._lock = threading.Lock()
        self._files: dict[str, dict] = {}
        self._pairs: dict[str, dict] = {}
        self._loaded = path is None
        self._dirty = False

    def _load(self) -> None:
        if self._loaded or self.path is None:
            return
        self._loaded = True
        data = read_cache(self.path, _CACHE_VERSION)  # {} for no cache yet, or a damaged one: start afresh
        self._files, self._pairs = section(data, "files"), section(data, "pairs")

    def facts(self, path: Path, key: FileKey) -> VocabFacts:
        with self._lock:
            self._load()
            cached = self._files.get(_key_text(key))
        if cached is not None:
            try:
                return VocabFacts(**cached)
            except TypeError:
                pass  # written by another version: read the file again
        info = inspect_gguf(path)
        facts = VocabFacts(
            vocab_type=info.vocab_type,
            vocab_size=info.vocab_size,
            add_bos=info.add_bos,
            bos_id=info.bos_id,
            add_eos=info.add_eos,
            eos_id=info.eos_id,
            tokens_digest=info.tokens_digest,
            parameter_count=info.parameter_count,
            usable=info.usable,
            problem=info.problem,
        )
        with self._lock:
            self._files[_key_text(key)] = asdict(facts)
            self._dirty = True
        return facts

    def pair(self, target: FileKey, draft: FileKey) -> Optional[dict]:
        """The answer stored for this pair (Compatibility's fields), or None."""
        with self._lock:
            self._load()
            return self._pairs.get(_key_text(target) + "\x1e" + _key_text(draft))

    def put_pair(self, target: FileKey, draft: FileKey, result: dict) -> None:
        with self._lock:
            self._pairs[_key_text(target) + "\x1e" + _key_text(draft)] = result
            while len(self._pairs) > _MAX_CACHED_PAIRS:
                self._pairs.pop(next(iter(self._pairs)))  # oldest first: dicts keep insertion order
            self._dirty = True

    def save(self) -> None:
        """Write the cache atomically (temp file, then rename) if anything changed. Failure to write is harmless."""
        if self.path is None:
            return
        with self._lock:
            if not self._dirty:
                return
            self._drop_stale_files()
            payload = {"files": dict(self._files), "pairs": dict(self._pairs)}
            self._dirty = False
        write_cache(self.path, _CACHE_VERSION, payload)  # a cache: losing it costs a re-check

    def _drop_stale_files(self) -> None:
        # Keep one entry per path: an older size/mtime of a file will never be asked for again.
        latest: dict[str, str] = {}
        for key in self._files:
            latest[key.split("\x1f", 1)[0]] = key
        stale = set(self._files) - set(latest.values())
        for key in stale:
            del self._files[key]

    def clear_memory(self) -> None:
        """Forget what is in memory (the next lookup reads the file again), as a new process would."""
        with self._lock:
            self._files, self._pairs = {}, {}
            self._loaded = self.path is None
            self._dirty = False


_caches: dict[Path, CompatCache] = {}
_caches_lock = threading.Lock()


def default_cache() -> CompatCache:
    """The cache in the current user cache folder (which tests move per test through SPECCHAT_HOME)."""
    path = user_cache_dir() / CACHE_FILE_NAME
    with _caches_lock:
        cache = _caches.get(path)
        if cache is None:
            cache = _caches[path] = CompatCache(path)
        return cache
