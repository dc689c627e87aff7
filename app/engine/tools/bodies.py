"""A call block's body read into calls: JSON objects (one, a list, or several in a row), Qwen3-Coder's XML, and
Mistral's forms, as each family writes them inside its markers.

A call's `arguments` are the model's own text of its arguments object where it wrote, inside `<tool_call>` tags,
an object with an object as its arguments (`{"name": ..., "arguments": {...}}`): that is the form a stream sends
while it is written (app.engine.tools.stream), and the pieces sent add up to the very text the whole call holds.
Every other form (`written` False: fenced, bare, Llama 3, Mistral) is re-written by `json.dumps`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Optional

import jiter

from app.engine.tools.calls import ToolCall, arguments_text

# The keys a call object holds its arguments under: "arguments" (Hermes, OpenAI) or "parameters" (Llama 3).
ARGUMENT_KEYS = ("arguments", "parameters")


@dataclass(frozen=True)
class ObjectSpans:
    """Where things lie in the text of a call object (from its `{`), complete or still being written."""

    arguments_start: int = -1  # where its arguments object's `{` is (-1: not written yet, or not an object)
    arguments_end: int = -1  # just after that object's `}` (-1: still being written)
    end: int = -1  # just after the call object's own `}` (-1: still being written)


# What the scan stops at: a string's opening quote, or a structural character; and a string's body up to its
# closing quote (escapes whole: a backslash at the text's end is left for the next read).
_STRUCTURE = re.compile(r'["{}\[\]:,]')
_STRING_BODY = re.compile(r'[^"\\]*(?:\\.[^"\\]*)*')


class ObjectScan:
    """The spans of a call object read on as its text grows: each read goes on from where the last one stopped
    (inside a string still being written, too), so a stream that reads the call again at every token reads each
    character about once; an Edit's arguments hold a whole file. Strings (with their escapes) and nesting are
    followed, nothing else is checked (a JSON reader says whether it is valid). One per call object; any one
    thread; the text given must only grow."""

    def __init__(self) -> None:
        self._pos = 0  # where the next read begins: after the last token read, or at a string still open
        self._resume = -1  # in that open string, where its body was read to
        self._depth = 0
        self._last_string: Optional[str] = None
        self._value_from = -1  # where the arguments' value begins, once its key and colon are read
        self._spans = ObjectSpans()

    def read(self, text: str) -> ObjectSpans:
        spans = self._spans
        if spans.end >= 0:
            return spans
        start, stop, end = spans.arguments_start, spans.arguments_end, -1
        while end < 0 and (match := _STRUCTURE.search(text, self._pos)) is not None:
            token, at = match.group(), match.start()
            if self._value_from >= 0 and start < 0:
                if token != "{" or text[self._value_from : at].strip():
                    self._value_from = -1  # arguments as a string, a number or null: no object to point at
                else:
                    start = at
            if token == '"':
                body = _STRING_BODY.match(text, self._resume if self._resume > at else at + 1)
                close = body.end() if body else at + 1
                if close >= len(text) or text[close] != '"':
                    self._pos, self._resume = at, close  # still being written: read on from here next time
                    break
                self._last_string, self._pos = text[at + 1 : close], close + 1
                continue
            self._pos = match.end()
            if token in "{[":
                self._depth += 1
            elif token in "}]":
                self._depth -= 1
                if start >= 0 and stop < 0 and self._depth == 1:
                    stop = at + 1
                if self._depth == 0:
                    end = at + 1
            elif token == ":" and self._depth == 1 and self._last_string in ARGUMENT_KEYS and start < 0:
                self._value_from = match.end()
            elif token == "," and self._depth == 1:
                self._last_string = None
        self._spans = ObjectSpans(start, stop, end)
        return self._spans


def object_spans(text: str) -> ObjectSpans:
    """The spans of the call object at the start of `text`, read as far as it is written."""
    return ObjectScan().read(text)


@dataclass(frozen=True)
class OpenCall:
    """A call object as far as it is written."""

    name: str = ""  # the tool's name once it is whole ("" before, or in a form that is not streamed)
    arguments: str = ""  # its arguments object's text so far ("" before its `{`, or when the text is no JSON yet)


def open_call(body: str, scan: Optional[ObjectScan] = None) -> OpenCall:
    """A Hermes call body still being written (`{"name": ..., "arguments": {...` so far). jiter's partial mode reads
    the name (only once its string is closed) and says whether the text so far is JSON at all; the arguments' text
    is given only while it is. A list of calls, Qwen3-Coder's XML or doubled braces give nothing: such a call is
    sent whole once it is read. `scan`: the one this body was read with last time, to read on from there."""
    text = body.lstrip()
    if not text.startswith("{") or text.startswith("{{"):
        return OpenCall()
    spans = (scan or ObjectScan()).read(text)
    try:
        value = jiter.from_json(text[: spans.end if spans.end >= 0 else len(text)].encode(), partial_mode="on")
    except ValueError:
        return OpenCall()
    name = value.get("name") if isinstance(value, dict) else None
    if not isinstance(name, str):
        return OpenCall()
    if spans.arguments_start < 0:
        return OpenCall(name)
    return OpenCall(name, text[spans.arguments_start : spans.arguments_end if spans.arguments_end >= 0 else len(text)])


def _written_arguments(body: str, value: object) -> Optional[str]:
    """The model's own text of the arguments object in `body` (one call object), when it holds exactly `value`."""
    text = body.strip()
    spans = object_spans(text)
    if spans.arguments_end < 0 or spans.end != len(text):
        return None
    written = text[spans.arguments_start : spans.arguments_end]
    try:
        return written if json.loads(written) == value else None
    except ValueError:
        return None


def json_calls(body: str, names: Optional[frozenset[str]], written: bool = False) -> Optional[list[ToolCall]]:
    """`{"name", "arguments"|"parameters"}` (or a list of them, or OpenAI's own `{"function": {...}}`); None when
    the body is not that, or names a tool not offered (when `names` says which are)."""
    try:
        value = json.loads(body)
    except ValueError:
        value = doubled_braces(body)
        if value is None:
            return None
    items = value if isinstance(value, list) else [value]
    calls = []
    for item in items:
        if not isinstance(item, dict):
            return None
        if isinstance(item.get("function"), dict):
            item = {**item["function"], "id": item.get("id")}
        name = item.get("name")
        if not isinstance(name, str) or not name or names is not None and name not in names:
            return None
        raw = item.get("arguments", item.get("parameters"))
        args = arguments_text(raw)
        if written and args is not None and isinstance(value, dict) and isinstance(raw, dict):
            args = _written_arguments(body, raw) or args
        if args is None:
            return None
        call_id = item.get("id")
        calls.append(ToolCall(name, args, call_id if isinstance(call_id, str) else ""))
    return calls or None


_FUNCTION = re.compile(r"<function=([^>\s]+)>(.*?)(?:</function>|$)", re.S)
_PARAMETER = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?(?:</parameter>|(?=<parameter=)|$)", re.S)


def xml_calls(body: str, types: dict[str, dict[str, str]]) -> Optional[list[ToolCall]]:
    """Qwen3-Coder's `<function=NAME><parameter=P>value</parameter></function>`. A value stays text where the
    tool's schema says string (or says nothing and it is no JSON value), else it is read as JSON."""
    calls = []
    for match in _FUNCTION.finditer(body):
        name, inner = match.group(1), match.group(2)
        args = {}
        for param in _PARAMETER.finditer(inner):
            key, raw = param.group(1), param.group(2)
            kind = types.get(name, {}).get(key)
            if kind == "string":
                args[key] = raw
                continue
            try:
                args[key] = json.loads(raw)
            except ValueError:
                args[key] = raw
        calls.append(ToolCall(name, json.dumps(args, ensure_ascii=False)))
    return calls or None


def doubled_braces(body: str) -> Optional[dict]:
    """`{{"name": ...}}`: the object inside doubled braces, as Qwen2.5's template shows its call format (a Python
    format string's escape kept in the template) and the 1.5B then writes it."""
    text = body.strip()
    if not text.startswith("{{"):
        return None
    try:
        value, end = json.JSONDecoder().raw_decode(text, 1)
    except ValueError:
        return None
    return value if isinstance(value, dict) and not text[end:].strip("} \n\t") else None


def mistral_read(body: str, names) -> Optional[list[ToolCall]]:
    calls: list[ToolCall] = []
    for part in body.removesuffix("</s>").split("[TOOL_CALLS]"):
        part = part.strip()
        if part.startswith("["):
            got = json_calls(part, names)
            if got is None:
                return None
            calls += got
            continue
        name, sep, args = part.partition("[ARGS]")  # the v11 tokenizer's `NAME[ARGS]{json}`
        name = name.split("[CALL_ID]")[0].strip()
        text = arguments_text(args.strip()) if sep else None
        if not name or text is None or names is not None and name not in names:
            return None
        calls.append(ToolCall(name, text))
    return calls or None


def llama3_read(body: str, names, written: bool = False) -> Optional[list[ToolCall]]:
    """One call, or several separated by `;` or new lines, as Llama 3.x writes them."""
    body = body.strip()
    calls = json_calls(body, names, written)
    if calls is not None:
        return calls
    decoder, pos, out = json.JSONDecoder(), 0, []
    while pos < len(body):
        try:
            _, end = decoder.raw_decode(body, pos)
        except ValueError:
            return None
        got = json_calls(body[pos:end], names, written)
        if got is None:
            return None
        out += got
        pos = end
        while pos < len(body) and body[pos] in "; \n\t":
            pos += 1
    return out or None


def hermes_read(body: str, types: dict[str, dict[str, str]], names) -> Optional[list[ToolCall]]:
    stripped = body.strip()
    if stripped.startswith("<function="):
        calls = xml_calls(stripped, types)
        return calls if calls and all(names is None or c.name in names for c in calls) else None
    return llama3_read(stripped, names, written=True)
