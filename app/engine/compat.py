"""Can this draft model speculate for that target? llama.cpp's rules, answered from the files' metadata.

The rules are those of llama.cpp's common_speculative_are_compatible (common/speculative.cpp), in its order: same
tokenizer type; same add-BOS flag and, when BOS is added, the same BOS id; the same for EOS; vocabulary sizes at most
128 apart; identical token texts for every id from 5 up to the smaller size. We answer without loading either
model: token texts are compared by digest and only read one by one when the digests disagree.

Answers are cached by (path, size, mtime) of both files, in memory and in a JSON file in the user cache folder, so
a library of many models is sorted instantly the second time and a changed file is checked again.
"""

from __future__ import annotations

import json
import math
import os
import threading
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Iterable, Optional

from app.atomic_write import write_atomic
from app.engine.errors import ModelFileError
from app.engine.gguf_info import TOKEN_CHECK_START, inspect_gguf, read_token_texts

MAX_VOCAB_SIZE_DIFFERENCE = 128  # SPEC_VOCAB_MAX_SIZE_DIFFERENCE
CACHE_FILE_NAME = "draft-compatibility.json"
_CACHE_VERSION = 2  # 2: facts include the header checks of app.engine.gguf_checks
_MAX_CACHED_PAIRS = 20000

# suggest_drafts: a draft at most this fraction of the target's parameters is worth speculating with, and one
# around IDEAL_DRAFT_RATIO (between 1/10 and 1/4) balances acceptance against the draft's own cost.
SMALL_DRAFT_RATIO = 0.5
IDEAL_DRAFT_RATIO = 0.16


@dataclass(frozen=True)
class Compatibility:
    compatible: bool
    reason: str  # the first rule that fails, for a person; "" when compatible
    rule: str = ""  # "unusable", "vocab_type", "bos", "eos", "vocab_size", "token_text"; "" when compatible


@dataclass(frozen=True)
class DraftSuggestion:
    """One candidate draft for a target, as the model picker lists it (incompatible ones shown disabled)."""

    path: Path
    compatible: bool
    recommended: bool  # compatible and much smaller than the target
    reason: str  # why it is not usable, or how it compares with the target
    size_ratio: Optional[float]  # draft parameters / target parameters, None when unknown


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
        if self._loaded:
            return
        self._loaded = True
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return  # no cache yet, or a damaged one: start afresh
        if isinstance(data, dict) and data.get("version") == _CACHE_VERSION:
            files, pairs = data.get("files"), data.get("pairs")
            if isinstance(files, dict) and isinstance(pairs, dict):
                self._files, self._pairs = files, pairs

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
            vocab_type=info.vocab_type, vocab_size=info.vocab_size, add_bos=info.add_bos, bos_id=info.bos_id,
            add_eos=info.add_eos, eos_id=info.eos_id, tokens_digest=info.tokens_digest,
            parameter_count=info.parameter_count, usable=info.usable, problem=info.problem,
        )
        with self._lock:
            self._files[_key_text(key)] = asdict(facts)
            self._dirty = True
        return facts

    def pair(self, target: FileKey, draft: FileKey) -> Optional[Compatibility]:
        with self._lock:
            self._load()
            cached = self._pairs.get(_key_text(target) + "\x1e" + _key_text(draft))
        if cached is None:
            return None
        try:
            return Compatibility(**cached)
        except TypeError:
            return None

    def put_pair(self, target: FileKey, draft: FileKey, result: Compatibility) -> None:
        with self._lock:
            self._pairs[_key_text(target) + "\x1e" + _key_text(draft)] = asdict(result)
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
            payload = json.dumps({"version": _CACHE_VERSION, "files": self._files, "pairs": self._pairs})
            self._dirty = False
        try:
            write_atomic(self.path, payload, durable=False)  # a cache: losing it costs a re-check
        except OSError:
            pass

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
    from app.paths import user_cache_dir

    path = user_cache_dir() / CACHE_FILE_NAME
    with _caches_lock:
        cache = _caches.get(path)
        if cache is None:
            cache = _caches[path] = CompatCache(path)
        return cache


def compatibility(target: Path, draft: Path, *, cache: Optional[CompatCache] = None) -> Compatibility:
    """Whether `draft` can speculate for `target` under llama.cpp's rules. Raises ModelFileError for an unreadable file."""
    cache = cache or default_cache()
    result = _compatibility(Path(target), Path(draft), cache)
    cache.save()
    return result


def _compatibility(target: Path, draft: Path, cache: CompatCache) -> Compatibility:
    target_key, draft_key = file_key(target), file_key(draft)
    cached = cache.pair(target_key, draft_key)
    if cached is not None:
        return cached
    result = _check(target, draft, cache.facts(target, target_key), cache.facts(draft, draft_key))
    cache.put_pair(target_key, draft_key, result)
    return result


def _check(target: Path, draft: Path, tgt: VocabFacts, dft: VocabFacts) -> Compatibility:
    if not tgt.usable:
        return Compatibility(False, f"the target cannot be used: {tgt.problem}", "unusable")
    if not dft.usable:
        return Compatibility(False, f"the draft cannot be used: {dft.problem}", "unusable")
    if tgt.vocab_type != dft.vocab_type:
        return Compatibility(
            False, f"different tokenizer types: target {tgt.vocab_type}, draft {dft.vocab_type}", "vocab_type"
        )
    if tgt.add_bos != dft.add_bos:
        adds, lacks = ("target", "draft") if tgt.add_bos else ("draft", "target")
        return Compatibility(False, f"the {adds} starts every prompt with a BOS token and the {lacks} does not", "bos")
    if tgt.add_bos and tgt.bos_id != dft.bos_id:
        return Compatibility(False, f"different BOS tokens: target {tgt.bos_id}, draft {dft.bos_id}", "bos")
    if tgt.add_eos != dft.add_eos:
        adds, lacks = ("target", "draft") if tgt.add_eos else ("draft", "target")
        return Compatibility(False, f"the {adds} ends every prompt with an EOS token and the {lacks} does not", "eos")
    if tgt.add_eos and tgt.eos_id != dft.eos_id:
        return Compatibility(False, f"different EOS tokens: target {tgt.eos_id}, draft {dft.eos_id}", "eos")
    if abs(tgt.vocab_size - dft.vocab_size) > MAX_VOCAB_SIZE_DIFFERENCE:
        return Compatibility(
            False,
            f"different vocabulary sizes: target {tgt.vocab_size}, draft {dft.vocab_size} "
            f"(more than {MAX_VOCAB_SIZE_DIFFERENCE} apart)",
            "vocab_size",
        )
    if tgt.vocab_size == dft.vocab_size and tgt.tokens_digest == dft.tokens_digest:
        return Compatibility(True, "")
    return _compare_token_texts(target, draft, min(tgt.vocab_size, dft.vocab_size))


def _compare_token_texts(target: Path, draft: Path, stop: int) -> Compatibility:
    target_texts = read_token_texts(target, TOKEN_CHECK_START, stop)
    draft_texts = read_token_texts(draft, TOKEN_CHECK_START, stop)
    for offset, (tgt_text, dft_text) in enumerate(zip(target_texts, draft_texts)):
        # llama.cpp compares C strings: a NUL byte ends the text.
        if tgt_text.split(b"\0", 1)[0] != dft_text.split(b"\0", 1)[0]:
            token_id = TOKEN_CHECK_START + offset
            return Compatibility(
                False, f"token {token_id} differs: target {_show(tgt_text)}, draft {_show(dft_text)}", "token_text"
            )
    return Compatibility(True, "")


def _show(text: bytes) -> str:
    return repr(text.decode("utf-8", errors="replace"))


def suggest_drafts(
    target: Path, candidates: Iterable[Path], *, cache: Optional[CompatCache] = None
) -> list[DraftSuggestion]:
    """Rank candidate drafts for `target`: good ones (compatible, much smaller) best first, then compatible ones
    that are not much smaller, then incompatible or unreadable ones with their reason. The target itself is left out.
    Raises ModelFileError when the target is unreadable.
    """
    cache = cache or default_cache()
    target = Path(target)
    target_key = file_key(target)
    target_facts = cache.facts(target, target_key)
    seen = {target_key[0]}
    good: list[tuple[float, DraftSuggestion]] = []
    fallback: list[tuple[float, DraftSuggestion]] = []
    refused: list[DraftSuggestion] = []
    for candidate in candidates:
        candidate = Path(candidate)
        resolved = str(candidate.resolve())
        if resolved in seen:
            continue
        seen.add(resolved)
        try:
            result = _compatibility(target, candidate, cache)
            facts = cache.facts(candidate, file_key(candidate))
        except ModelFileError as exc:
            refused.append(DraftSuggestion(candidate, False, False, str(exc), None))
            continue
        ratio = facts.parameter_count / target_facts.parameter_count if target_facts.parameter_count else None
        if not result.compatible:
            refused.append(DraftSuggestion(candidate, False, False, result.reason, ratio))
        elif ratio is not None and ratio <= SMALL_DRAFT_RATIO:
            closeness = abs(math.log(max(ratio, 1e-9) / IDEAL_DRAFT_RATIO))
            good.append((closeness, DraftSuggestion(candidate, True, True, _relative_size(ratio), ratio)))
        else:
            reason = f"compatible, but {_relative_size(ratio)}: too big to speed it up" if ratio else "compatible"
            order = ratio if ratio is not None else math.inf
            fallback.append((order, DraftSuggestion(candidate, True, False, reason, ratio)))
    cache.save()
    good.sort(key=lambda item: item[0])
    fallback.sort(key=lambda item: item[0])
    return [s for _, s in good] + [s for _, s in fallback] + refused


def _relative_size(ratio: float) -> str:
    if 0.95 <= ratio <= 1.05:
        return "the same size as the target"
    if ratio > 1:
        return f"{ratio:.1f}× the target's size"
    if ratio >= 0.5:
        return f"{ratio:.0%} of the target's size"
    return f"about 1/{round(1 / ratio)} of the target's size" if ratio > 0 else "a tiny fraction of the target's size"
