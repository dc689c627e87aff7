"""The history drafter: what the user's earlier prompts and replies went on with, across all chats.

Edit-and-resend, Regenerate, Continue and "the same boilerplate again" repeat text that is not in the current
prompt but was written before. The index holds past texts as tokens of the loaded target and answers, like a suffix
tree (SuffixDecoding, Oliaro et al. 2024), "where did the last tokens occur before, and what followed them most
often?":

- Every 3-token window is a key into sorted arrays (one sorted segment per batch of additions, merged when there
  are many), so a lookup is a binary search, never a scan of the history.
- Of the places sharing the last 3 tokens, those whose match reaches furthest back are the deepest node of the
  suffix tree; the proposal walks forward from them, taking at each step the token most of them continue with.
- Confidence is the product of those frequencies (a continuation that 9 of 10 past copies took is likelier than one
  that 1 of 2 took); the walk stops when it falls below MIN_CONFIDENCE, so a draft is as long as the past agrees.

Memory is bounded: 16 bytes per indexed token (the token, its key, its position), so `memory_bytes` sets how many
tokens are kept; the least recently used documents go first. Used from the inference thread only.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from app.engine.events import Drafter
from app.engine.speculation.drafters import Draft

HISTORY_MEMORY_BYTES = 64 * 1024 * 1024
BYTES_PER_TOKEN = 16  # int32 token + int64 key + int32 position
ORDER = 3  # tokens a key covers
_SHIFT = 21  # bits per token in a key: exact for vocabularies below 2M tokens, a harmless hash above
_MASK = (1 << _SHIFT) - 1
_SEPARATOR = -1  # between documents: no match or continuation crosses it
_MAX_SEGMENTS = 8


@dataclass(frozen=True)
class _Document:
    key: int  # the caller's id for it (the history file's row)
    session: str
    start: int  # its span in the token array
    end: int


def _keys(tokens: np.ndarray, start: int, end: int) -> tuple[np.ndarray, np.ndarray]:
    """(key, position) of every ORDER-token window in tokens[start:end] that has a continuation token after it;
    position is the index of that continuation."""
    positions = np.arange(start + ORDER, end, dtype=np.int64)
    if positions.size == 0:
        return np.empty(0, np.int64), np.empty(0, np.int32)
    window = [tokens[positions - ORDER + i].astype(np.int64) & _MASK for i in range(ORDER)]
    keys = (window[0] << (2 * _SHIFT)) | (window[1] << _SHIFT) | window[2]
    return keys, positions.astype(np.int32)


def _key_of(last: Sequence[int]) -> int:
    a, b, c = (int(t) & _MASK for t in last[-ORDER:])
    return (a << (2 * _SHIFT)) | (b << _SHIFT) | c


class HistoryDrafter:
    """Proposes what followed the last tokens in earlier texts. Call from the inference thread only."""

    name: Drafter = "history"
    MAX_MATCH = 32  # matches are measured up to this many tokens back
    CANDIDATES = 256  # past places examined per lookup, the most recent first
    MIN_CONFIDENCE = 0.35  # the walk stops when the product of its frequencies falls below this
    MIN_MATCH = 4  # shorter matches are mostly coincidence (", and the"): no proposal

    def __init__(self, memory_bytes: int = HISTORY_MEMORY_BYTES):
        self.max_tokens = max(1024, memory_bytes // BYTES_PER_TOKEN)
        self._tokens = np.empty(0, np.int32)
        self._documents: OrderedDict[int, _Document] = OrderedDict()  # least recently used first
        self._segments: list[tuple[np.ndarray, np.ndarray]] = []  # (sorted keys, positions)
        self._starts = np.empty(0, np.int64)  # document starts, ascending (for position -> document)
        self._starts_keys: list[int] = []

    # -- contents -----------------------------------------------------------------------------------------------

    def __len__(self) -> int:
        return int(sum(d.end - d.start for d in self._documents.values()))

    def keys(self) -> set[int]:
        """The ids of the documents held."""
        return set(self._documents)

    def add(self, key: int, session: str, tokens: Sequence[int]) -> None:
        """Index one text (a prompt's new part and its reply). Documents least recently used go when the memory
        bound is reached; a text longer than the whole bound keeps its end."""
        if key in self._documents:
            return
        tokens = list(tokens)[-self.max_tokens :]
        if len(tokens) <= ORDER:
            return
        start = int(self._tokens.size)
        self._tokens = np.concatenate([self._tokens, np.asarray(tokens, np.int32), [_SEPARATOR]]).astype(np.int32)
        document = _Document(key, session, start, start + len(tokens))
        self._documents[key] = document
        self._starts = np.append(self._starts, start)
        self._starts_keys.append(key)
        self._segments.append(_sorted(*_keys(self._tokens, document.start, document.end)))
        held = len(self)
        if held > self.max_tokens:
            while held > self.max_tokens and len(self._documents) > 1:
                _, gone = self._documents.popitem(last=False)
                held -= gone.end - gone.start
            self._rebuild()
        elif len(self._segments) > _MAX_SEGMENTS:
            keys = np.concatenate([s[0] for s in self._segments])
            positions = np.concatenate([s[1] for s in self._segments])
            self._segments = [_sorted(keys, positions)]

    def remove(self, keys: set[int]) -> None:
        """Forget documents (a deleted chat's texts)."""
        gone = keys & set(self._documents)
        if gone:
            for key in gone:
                del self._documents[key]
            self._rebuild()

    def _rebuild(self) -> None:
        """Pack the documents kept into fresh arrays (after evicting or forgetting some)."""
        old = self._tokens
        documents = list(self._documents.values())
        self._tokens = np.empty(0, np.int32)
        self._documents = OrderedDict()
        self._segments = []
        self._starts = np.empty(0, np.int64)
        self._starts_keys = []
        parts, start = [], 0
        for d in documents:
            parts.append(old[d.start : d.end + 1])  # with its separator
            self._documents[d.key] = _Document(d.key, d.session, start, start + d.end - d.start)
            start += d.end - d.start + 1
        if not parts:
            return
        self._tokens = np.concatenate(parts).astype(np.int32)
        ordered = sorted(self._documents.values(), key=lambda d: d.start)
        self._starts = np.asarray([d.start for d in ordered], np.int64)
        self._starts_keys = [d.key for d in ordered]
        keys, positions = zip(*(_keys(self._tokens, d.start, d.end) for d in ordered))
        self._segments = [_sorted(np.concatenate(keys), np.concatenate(positions))]

    # -- proposing ----------------------------------------------------------------------------------------------

    def _candidates(self, written: Sequence[int]) -> np.ndarray:
        key = _key_of(written)
        found = []
        for keys, positions in self._segments:
            lo, hi = np.searchsorted(keys, key, "left"), np.searchsorted(keys, key, "right")
            if hi > lo:
                found.append(positions[lo:hi])
        if not found:
            return np.empty(0, np.int64)
        places = np.concatenate(found).astype(np.int64)
        return np.sort(places)[-self.CANDIDATES :]

    def _match_lengths(self, places: np.ndarray, written: Sequence[int]) -> np.ndarray:
        """How many tokens before each place equal the last ones of `written` (up to MAX_MATCH)."""
        depth = min(self.MAX_MATCH, len(written))
        back = np.arange(1, depth + 1)
        index = places[:, None] - back[None, :]
        past = np.where(index >= 0, self._tokens[np.clip(index, 0, None)], _SEPARATOR - 1)
        recent = np.asarray(written[-depth:][::-1], np.int64)
        same = past == recent[None, :]
        return np.cumprod(same, axis=1).sum(axis=1)

    def propose(self, written: Sequence[int], k: int) -> Draft:
        """Up to k tokens that followed the longest earlier match of the end of `written` (the request's tokens),
        with their confidence."""
        if k <= 0 or len(written) < self.MIN_MATCH or not self._segments:
            return Draft(source=self.name)
        places = self._candidates(written)
        if places.size == 0:
            return Draft(source=self.name)
        lengths = self._match_lengths(places, written)
        best = int(lengths.max())
        if best < self.MIN_MATCH:
            return Draft(source=self.name)
        places = places[lengths == best]
        tokens: list[int] = []
        confidence = 1.0
        while len(tokens) < k and places.size:
            following = self._tokens[places]
            following = following[following != _SEPARATOR]
            if following.size == 0:
                break
            values, counts = np.unique(following, return_counts=True)
            top = int(np.argmax(counts))
            share = counts[top] / places.size
            if confidence * share < self.MIN_CONFIDENCE:
                break
            confidence *= share
            token = int(values[top])
            tokens.append(token)
            places = places[self._tokens[places] == token] + 1
        if tokens:
            self._touch(int(places[0]) if places.size else -1)
        return Draft(tokens=tokens, source=self.name, match_len=best, confidence=confidence if tokens else 0.0)

    def _touch(self, place: int) -> None:
        """The document a proposal came from becomes the most recently used."""
        if place < 0 or not self._starts_keys:
            return
        at = int(np.searchsorted(self._starts, place, "right")) - 1
        key = self._starts_keys[at]
        if key in self._documents:
            self._documents.move_to_end(key)


def _sorted(keys: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(keys, kind="stable")
    return keys[order], positions[order]
