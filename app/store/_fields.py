"""Reading dataclass records back from JSON written by this or another version of SpecChat.

Used for the app settings, each chat's settings and each reply's stats (app.store.record_from_dict).
Unknown keys are dropped (a newer version may have added them) and a value of the wrong type falls back to the
field's default, so one bad value never costs the user the rest of their settings.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, TypeVar

T = TypeVar("T")


def _matches(value: Any, hint: Any) -> bool:
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, arg) for arg in typing.get_args(hint))
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is str:
        return isinstance(value, str)
    if origin is list:
        (item,) = typing.get_args(hint)
        return isinstance(value, list) and all(_matches(v, item) for v in value)
    if origin is dict:
        return isinstance(value, dict)
    return True


def _convert(value: Any, hint: Any) -> Any:
    # JSON has one number type: keep floats floats (2 -> 2.0) so a round trip compares equal.
    if hint is float or (typing.get_origin(hint) in (typing.Union, types.UnionType) and float in typing.get_args(hint)):
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value)
    if isinstance(value, list):
        return list(value)
    return value


@functools.lru_cache(maxsize=None)
def _type_hints(cls: type) -> dict[str, Any]:
    # Resolving the annotations costs far more than reading a row: once per record type, not once per row.
    return typing.get_type_hints(cls)


def from_dict(cls: type[T], data: Any, skip: tuple[str, ...] = ()) -> tuple[T, list[str]]:
    """Build `cls` from a JSON object; returns the record and the names of fields that fell back to defaults."""
    if not isinstance(data, dict):
        return cls(), ["(not a JSON object)"]
    hints = _type_hints(typing.cast(type, cls))  # type[T] is hashable; mypy reads the TypeVar as maybe not
    kwargs: dict[str, Any] = {}
    rejected: list[str] = []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in skip or f.name not in data:
            continue
        value = data[f.name]
        if _matches(value, hints[f.name]):
            kwargs[f.name] = _convert(value, hints[f.name])
        else:
            rejected.append(f.name)
    return cls(**kwargs), rejected


def to_dict(record: Any, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    return {k: v for k, v in dataclasses.asdict(record).items() if k not in skip}
