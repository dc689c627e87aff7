"""A reply's provenance as the one compact JSON document stored with its message (the `tokens` column).

Replies run to thousands of tokens and are always read whole, so the document is a few columns, not an object per
token or per round:

    {"v": 2,
     "texts": ["Ray", "leigh", ...],          per kept token, its text
     "sources": "tdnh...",                    per kept token, one letter: target, draft model, n-gram copy, history
     "token_rounds": [0, 2, 1, 1, ...],       per kept token its round's index, as runs: (the run's value minus
                                              the previous run's, its length), ...; -1 for a token of no round
     "rounds": {"drafter": "mnhx...", "k": [...], "proposed": [[...]], "proposed_text": [[...]], "kept": [...],
                "own": [...], "own_text": [...], "reason": [...], "reasons": [...], "time_us": [...]},
     "comparison": {...}}                     the reply re-run without speculation, when it was

A reply's reasoning (a thinking model's) has a document of its own in the `reasoning_tokens` column: "v", "texts",
"sources" and "token_rounds" as above, the round indices pointing into the rounds of the answer's document.

Every key but "v" may be absent. Version 1 documents (before n-gram copies and rounds were kept) hold "texts" and
"sources" with "d" and "t" only; they read as they always did, "d" being a draft-model token. Plain decoding makes a
round per token, so each reason is stored once in "reasons" and rounds refer to it by position, and round indices
are stored as differences. Round times are kept in whole microseconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from app.store.provenance import RoundRecord

FORMAT = 2
_ORIGIN_TO_CODE = {"target": "t", "draft": "d", "ngram": "n", "history": "h"}
_CODE_TO_ORIGIN = {code: origin for origin, code in _ORIGIN_TO_CODE.items()}
_DRAFTER_TO_CODE = {"model": "m", "ngram": "n", "history": "h", "none": "x"}
_CODE_TO_DRAFTER = {code: drafter for drafter, code in _DRAFTER_TO_CODE.items()}
_ROUND_COLUMNS = ("k", "proposed", "proposed_text", "kept", "own", "own_text", "reason", "time_us")
# A round's kind (app.engine.events.RoundKind) as one character; "-" where it was not recorded.
_KIND_TO_CODE = {
    "draft": "d",
    "probe": "p",
    "fixed": "f",
    "paused": "z",
    "costly": "c",
    "unavailable": "u",
    "timing": "t",
    "server": "s",
    "batch": "b",
    "": "-",
}
_CODE_TO_KIND = {code: kind for kind, code in _KIND_TO_CODE.items()}


@dataclass
class StoredProvenance:
    """What the document holds; each part None when the message has none."""

    tokens: list[tuple[str, str]] | None = None  # (text, origin)
    token_rounds: list[int] | None = None  # per token, its round's index into `rounds` (-1: none)
    rounds: list[RoundRecord] | None = None
    comparison: dict | None = None

    def is_empty(self) -> bool:
        return all(part is None for part in (self.tokens, self.token_rounds, self.rounds, self.comparison))


def encode_provenance(provenance: StoredProvenance) -> str | None:
    """The document for `provenance` (None when it holds nothing). Raises ValueError or TypeError on bad values,
    so a caller can refuse them before writing anything."""
    if provenance.is_empty():
        return None
    document: dict[str, Any] = {"v": FORMAT}
    rounds = provenance.rounds
    document.update(_token_part(provenance.tokens, provenance.token_rounds, len(rounds) if rounds is not None else 0))
    if rounds is not None:
        document["rounds"] = _round_columns(rounds)
    if provenance.comparison is not None:
        if not isinstance(provenance.comparison, dict):
            raise TypeError(f"comparison must be a dict, not {type(provenance.comparison).__name__}")
        document["comparison"] = provenance.comparison
    return _dumps(document)


def encode_reasoning_tokens(
    tokens: list[tuple[str, str]] | None, token_rounds: list[int] | None, round_count: int
) -> str | None:
    """The document of a reply's reasoning (the `reasoning_tokens` column): its tokens kept as the answer's are,
    each round index pointing into the rounds of the answer's document (`round_count` of them). None for none."""
    if tokens is None:
        return None
    return _dumps({"v": FORMAT, **_token_part(tokens, token_rounds, round_count)})


def decode_reasoning_tokens(
    encoded: str | None, round_count: int
) -> tuple[list[tuple[str, str]] | None, list[int] | None]:
    """(tokens, token_rounds) of a reasoning document. Raises ValueError, TypeError or KeyError when damaged."""
    if encoded is None:
        return None, None
    document = json.loads(encoded)
    if not isinstance(document, dict):
        raise ValueError("reasoning provenance is damaged: not a JSON object")
    tokens = _tokens_from(document)
    return tokens, _token_rounds_from(document, tokens, round_count)


def _token_part(tokens: list[tuple[str, str]] | None, token_rounds: list[int] | None, limit: int) -> dict[str, Any]:
    part: dict[str, Any] = {}
    if tokens is not None:
        part["texts"], part["sources"] = _token_columns(tokens)
    if token_rounds is not None:
        if tokens is None or len(token_rounds) != len(tokens):
            raise ValueError("token_rounds needs one round index per token")
        if any(not _is_int(r) or not -1 <= r < limit for r in token_rounds):
            raise ValueError("a token's round index must point into the reply's rounds (or be -1)")
        part["token_rounds"] = _run_lengths(token_rounds)
    return part


def _dumps(document: dict[str, Any]) -> str:
    encoded = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    try:
        encoded.encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be stored as UTF-8 text; \u escapes keep even that exact.
        encoded = json.dumps(document, ensure_ascii=True, separators=(",", ":"))
    return encoded


def decode_provenance(encoded: str | None) -> StoredProvenance:
    """Read a document of any version. Raises ValueError, TypeError or KeyError when it is damaged."""
    if encoded is None:
        return StoredProvenance()
    document = json.loads(encoded)
    if not isinstance(document, dict):
        raise ValueError("token provenance is damaged: not a JSON object")
    provenance = StoredProvenance()
    provenance.tokens = _tokens_from(document)
    if "rounds" in document:
        provenance.rounds = _rounds_from_columns(document["rounds"])
    provenance.token_rounds = _token_rounds_from(document, provenance.tokens, len(provenance.rounds or []))
    if "comparison" in document:
        if not isinstance(document["comparison"], dict):
            raise ValueError("token provenance is damaged: the comparison is not an object")
        provenance.comparison = document["comparison"]
    return provenance


def _tokens_from(document: dict[str, Any]) -> list[tuple[str, str]] | None:
    if "texts" not in document:
        return None
    texts, codes = document["texts"], document["sources"]
    if not isinstance(texts, list) or not isinstance(codes, str) or len(texts) != len(codes):
        raise ValueError("token provenance is damaged: texts and sources differ in length")
    if not all(isinstance(text, str) for text in texts):
        raise ValueError("token provenance is damaged: a token text is not a string")
    return [(text, _CODE_TO_ORIGIN[code]) for text, code in zip(texts, codes)]


def _token_rounds_from(document: dict[str, Any], tokens: list[tuple[str, str]] | None, limit: int) -> list[int] | None:
    if "token_rounds" not in document:
        return None
    token_rounds = _from_run_lengths(document["token_rounds"])
    if tokens is None or len(token_rounds) != len(tokens):
        raise ValueError("token provenance is damaged: round indices do not match the tokens")
    if any(not -1 <= r < limit for r in token_rounds):
        raise ValueError("token provenance is damaged: a round index points past the rounds")
    return token_rounds


def encode_tokens(tokens: Iterable[tuple[str, str]] | None) -> str | None:
    """The document for tokens alone (no rounds)."""
    return encode_provenance(StoredProvenance(tokens=list(tokens) if tokens is not None else None))


def decode_tokens(encoded: str | None) -> list[tuple[str, str]] | None:
    return decode_provenance(encoded).tokens


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _token_columns(tokens: Iterable[tuple[str, str]]) -> tuple[list[str], str]:
    texts: list[str] = []
    codes: list[str] = []
    for text, origin in tokens:
        if not isinstance(text, str):
            raise TypeError(f"token text must be str, not {type(text).__name__}")
        try:
            codes.append(_ORIGIN_TO_CODE[origin])
        except (KeyError, TypeError):
            raise ValueError(f"token origin must be 'target', 'draft', 'ngram' or 'history', not {origin!r}") from None
        texts.append(text)
    return texts, "".join(codes)


def _run_lengths(values: list[int]) -> list[int]:
    """[5, 5, 5, 6, -1] -> [5, 3, 1, 1, -7, 1]: a round's tokens are neighbours and rounds count up, so runs are
    long and the steps between them small."""
    flat: list[int] = []
    previous = current = 0
    for value in values:
        if flat and value == current:
            flat[-1] += 1
        else:
            flat += [value - previous, 1]
            previous = current = value
    return flat


def _from_run_lengths(flat: Any) -> list[int]:
    if not isinstance(flat, list) or len(flat) % 2 or not all(_is_int(v) for v in flat):
        raise ValueError("token provenance is damaged: round indices are not value, count pairs")
    values: list[int] = []
    value = 0
    for step, count in zip(flat[::2], flat[1::2]):
        if count < 1:
            raise ValueError("token provenance is damaged: a run of round indices is empty")
        value += step
        values += [value] * count
    return values


def _round_columns(rounds: list[RoundRecord]) -> dict[str, Any]:
    reasons: dict[str, int] = {}
    columns: dict[str, Any] = {"drafter": "", **{name: [] for name in _ROUND_COLUMNS}}
    drafters: list[str] = []
    for record in rounds:
        if not isinstance(record, RoundRecord):
            raise TypeError(f"a round must be a RoundRecord, not {type(record).__name__}")
        try:
            drafters.append(_DRAFTER_TO_CODE[record.drafter])
        except KeyError:
            raise ValueError(
                f"a round's drafter must be 'model', 'ngram', 'history' or 'none', not {record.drafter!r}"
            ) from None
        if not all(_is_int(t) for t in record.proposed) or not all(isinstance(t, str) for t in record.proposed_text):
            raise TypeError("a round's proposed tokens must be ids and their texts strings")
        if not (
            _is_int(record.k)
            and _is_int(record.kept)
            and _is_int(record.own)
            and isinstance(record.own_text, str)
            and isinstance(record.reason, str)
            and isinstance(record.time_s, (int, float))
        ):
            raise TypeError("a round's k, kept and own must be ints, own_text and reason strings, time_s a number")
        columns["k"].append(record.k)
        columns["proposed"].append(list(record.proposed))
        columns["proposed_text"].append(list(record.proposed_text))
        columns["kept"].append(record.kept)
        columns["own"].append(record.own)
        columns["own_text"].append(record.own_text)
        columns["reason"].append(reasons.setdefault(record.reason, len(reasons)))
        columns["time_us"].append(round(float(record.time_s) * 1e6))
    columns["drafter"] = "".join(drafters)
    columns["reasons"] = list(reasons)
    if any(record.threads for record in rounds):  # optional: older documents have none, older readers skip it
        columns["threads"] = [int(record.threads) for record in rounds]
    if any(record.kind for record in rounds):  # optional too, like threads
        columns["kind"] = "".join(_KIND_TO_CODE.get(record.kind, "-") for record in rounds)
    if any(record.expected for record in rounds):
        columns["expected"] = [round(float(record.expected), 3) for record in rounds]
    return columns


def _rounds_from_columns(columns: Any) -> list[RoundRecord]:
    if not isinstance(columns, dict) or not isinstance(columns.get("drafter"), str):
        raise ValueError("token provenance is damaged: rounds are not columns")
    n = len(columns["drafter"])
    reasons = columns["reasons"]
    if not isinstance(reasons, list) or not all(isinstance(r, str) for r in reasons):
        raise ValueError("token provenance is damaged: round reasons are not strings")
    for name in _ROUND_COLUMNS:
        if not isinstance(columns[name], list) or len(columns[name]) != n:
            raise ValueError(f"token provenance is damaged: the rounds' {name} column has the wrong length")
    threads = columns.get("threads")
    if not (isinstance(threads, list) and len(threads) == n and all(_is_int(t) and t >= 0 for t in threads)):
        threads = [0] * n  # not recorded (or damaged: only the inspector's notes use it)
    kinds = columns.get("kind")
    if not (isinstance(kinds, str) and len(kinds) == n and all(code in _CODE_TO_KIND for code in kinds)):
        kinds = "-" * n  # not recorded (or damaged: only the inspector and export show it)
    expected = columns.get("expected")
    if not (
        isinstance(expected, list)
        and len(expected) == n
        and all(isinstance(e, (int, float)) and not isinstance(e, bool) and e >= 0 for e in expected)
    ):
        expected = [0.0] * n
    rounds: list[RoundRecord] = []
    for i, code in enumerate(columns["drafter"]):
        proposed, proposed_text = columns["proposed"][i], columns["proposed_text"][i]
        k, kept, own, own_text = columns["k"][i], columns["kept"][i], columns["own"][i], columns["own_text"][i]
        reason, time_us = columns["reason"][i], columns["time_us"][i]
        if not (
            isinstance(proposed, list)
            and all(_is_int(t) for t in proposed)
            and isinstance(proposed_text, list)
            and all(isinstance(t, str) for t in proposed_text)
            and _is_int(k)
            and _is_int(kept)
            and _is_int(own)
            and isinstance(own_text, str)
            and _is_int(reason)
            and 0 <= reason < len(reasons)
            and _is_int(time_us)
        ):
            raise ValueError(f"token provenance is damaged: round {i} has a value of the wrong type")
        rounds.append(
            RoundRecord(
                drafter=_CODE_TO_DRAFTER[code],
                k=k,
                proposed=proposed,
                proposed_text=proposed_text,
                kept=kept,
                own=own,
                own_text=own_text,
                reason=reasons[reason],
                time_s=time_us / 1e6,
                threads=threads[i],
                kind=_CODE_TO_KIND[kinds[i]],
                expected=float(expected[i]),
            )
        )
    return rounds
