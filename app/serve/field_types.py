"""A request's JSON read strictly: the body (its nesting, its Unicode) and each field's type, one sentence per refusal.

JSON has one number type and Python's bool is an int, so `true` would pass for 1 and `1.0` for a whole number: a
field that takes a whole number takes an int that is not a bool, within the range the engine can hold; a field
that takes true or false takes a bool, never a number or a string that reads like one.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Optional

from app.serve.errors import BadRequest

# A chat request nests 5 levels (body, messages, message, content parts, part), a tool's JSON schema some more;
# deeper is no request of ours, and its check needs no stack.
MAX_DEPTH = 64
# The widest whole number a field passes on (a seed; what OpenAI and other servers read as int64).
INT64_MAX = 2**63 - 1
_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_json_body(body: bytes) -> dict:
    """The request body as a JSON object whose every string is valid Unicode and which nests at most MAX_DEPTH
    levels. Raises BadRequest."""
    try:
        data = json.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise BadRequest("The request body is not UTF-8 text.") from None
    except json.JSONDecodeError as exc:
        raise BadRequest(f"The request body is not valid JSON ({exc.msg} at character {exc.pos}).") from None
    except RecursionError:
        raise BadRequest(f"The request body nests deeper than {MAX_DEPTH} levels.") from None
    except ValueError:  # Python refuses to convert an integer of more than 4300 digits
        raise BadRequest("The request body holds a number too long to read.") from None
    if not isinstance(data, dict):
        raise BadRequest("The request body must be a JSON object.")
    check_values(data)
    return data


def parse_json_text(text: str, where: str, depth: int) -> Any:
    """JSON text found inside the body (a call's `arguments`) at `where`, `depth` levels down, read and checked as
    the body is: together they nest at most MAX_DEPTH levels. Raises BadRequest."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise BadRequest(f"{where} nests deeper than the {MAX_DEPTH} levels a request may.") from None
    except ValueError:
        raise BadRequest(f"{where} is not valid JSON.") from None
    check_values(value, where, depth)
    return value


def check_values(data: Any, where: str = "the body", depth: int = 0) -> None:
    """Refuse `data` (the body, or a value found `depth` levels down in it) nested deeper than MAX_DEPTH in all, or
    holding a lone surrogate (JSON's "\\ud800" escape decodes to one): no text that cannot be written as UTF-8
    reaches the engine or a reply. Iterative: depth costs no stack."""
    root = where
    stack: list[tuple[Any, str, int]] = [(data, where, depth + 1)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, str):
            if _SURROGATE.search(value):
                raise BadRequest(f"The request holds text that is not valid Unicode (a lone surrogate) in {where}.")
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise BadRequest(
                f"The request body nests deeper than {MAX_DEPTH} levels."
                if root == "the body"
                else f"{root} nests deeper than the {MAX_DEPTH} levels a request may."
            )
        items = value.items() if isinstance(value, dict) else enumerate(value)
        for key, item in items:
            if isinstance(key, str):  # an object's key
                stack.append((key, where, depth))
                key = key if key.isascii() and key.isprintable() else "?"  # a path in a message: plain text only
                name = key if where == "the body" else f"{where}.{key}"
            else:
                name = f"{where}[{key}]"
            stack.append((item, _short(name), depth + 1))


def _short(where: str) -> str:
    return where if len(where) <= 80 else where[:77] + "..."


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def flag(data: dict, name: str, default: bool = False, shown: Optional[str] = None) -> bool:
    """The bool field `name` of `data` (`default` when absent or null). Raises BadRequest."""
    value = data.get(name)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise BadRequest(f'"{shown or name}" must be true or false.')
    return value


def whole(data: dict, name: str, default: Optional[int], low: int, high: int, words: str = "") -> Optional[int]:
    """The whole-number field `name` of `data`, from `low` to `high` (`default` when absent or null). `words` says
    what the range means, for the refusal. Raises BadRequest."""
    value = data.get(name)
    if value is None:
        return default
    if not is_int(value) or not low <= value <= high:
        raise BadRequest(f'"{name}" must be a whole number from {low} to {high}{words}.')
    return value


def number(data: dict, name: str, default: float, low: float, high: float) -> float:
    value = data.get(name)
    if value is None:
        return default
    # An int is compared as it is (a 400-digit one has no float), a float must be finite.
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or isinstance(value, float)
        and not math.isfinite(value)
        or not low <= value <= high
    ):
        raise BadRequest(f'"{name}" must be a number from {low:g} to {high:g}.')
    return float(value)
