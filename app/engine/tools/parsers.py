"""Splitting a reply's text into what it says and the tool calls it makes, one family of call formats at a time.

Every parser reads text so far (`final=False`, while streaming) or the whole reply (`final=True`). Before the end
it returns as `content` only text that can no longer become part of a call: a tail that may be the start of a call's
marker, and a call still being written, are held back. So content read early is always a prefix of content read
later, and text and calls are never mixed up. A block that looks like a call but cannot be read as one (bad JSON,
a call to a tool that was not offered, in any family) is content, as written.

A call inside `<think>...</think>` is the model thinking about a call, not making one: markers there are not read.
(Reasoning itself is split off before this, where a reasoning splitter runs; this only keeps the rule.)

A call counts only in the model's own call syntax. The family's markers are calls wherever the answer holds them.
The variants the real models write count only where they stand as a call is written: Qwen2.5-Coder 1.5B often
answers a request with tools by a fenced ```json {"name": ..., "arguments": ...}``` block instead of its
template's `<tool_call>` tags, as the whole reply or after a short lead-in ("I will look."); a fenced call so
counts only at the reply's very end, after at most LEAD_IN_MAX_CHARS of text, never a block quoted inside an
answer (an example from an attached file). A bare JSON call counts only as the whole reply. One block may hold
several calls (a JSON list, or objects one after another), as the 1.5B writes parallel calls.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from app.engine.tools.bodies import hermes_read, json_calls, llama3_read, mistral_read
from app.engine.tools.calls import ToolCall, ToolFormat, arguments_text

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"


@dataclass(frozen=True)
class Split:
    content: str
    calls: tuple[ToolCall, ...] = ()
    reasoning: str = ""  # Harmony's analysis channel (other families' reasoning is split off before this)
    pending: bool = False  # text is held back: a call (or what may become one) is still being written
    # A `<tool_call>` block still being written, which a stream sends as it goes: where its marker is in the text
    # (-1: none) and its body so far.
    open_at: int = -1
    open_body: str = ""


# -- the block machine (Hermes, fenced JSON, Mistral, Llama 3) ---------------------------------------------------


@dataclass(frozen=True)
class _Block:
    start: str
    end: Optional[str]  # None: the block runs to the reply's end
    read: Callable[[str], Optional[list[ToolCall]]]
    at_start_only: bool = False
    streams: bool = False  # a call still being written here is handed out as it goes (Split.open_body)


def _could_begin(tail: str, marker: str) -> int:
    """The length of the longest end of `tail` that is a beginning of `marker`."""
    for n in range(min(len(marker) - 1, len(tail)), 0, -1):
        if marker.startswith(tail[-n:]):
            return n
    return 0


_FENCE = re.compile(r"```(?:json)?[ \t]*\n(?=\s*[\[{])")


def _fence_tail(tail: str) -> int:
    """How much of `tail` to hold back because it may begin a fenced JSON call ("```json\\n{")."""
    at = tail.rfind("```")
    if at < 0:
        return _could_begin(tail, "```")
    rest = tail[at + 3 :]
    if re.fullmatch(r"(j(s(on?)?)?)?[ \t]*(\n\s*)?", rest):
        return len(tail) - at
    return 0


def _think_spans(text: str) -> list[tuple[int, int]]:
    spans, pos = [], 0
    while (start := text.find(THINK_OPEN, pos)) >= 0:
        end = text.find(THINK_CLOSE, start)
        stop = len(text) if end < 0 else end + len(THINK_CLOSE)
        spans.append((start, stop))
        pos = stop
    return spans


def _next_start(text: str, pos: int, blocks: Sequence[_Block], fence: bool, spans) -> Optional[tuple[int, int, _Block]]:
    """The earliest call marker at or after `pos` outside thinking: (where, its length, its block)."""
    best = None
    for block in blocks:
        at = text.find(block.start, pos)
        while at >= 0 and any(a <= at < b for a, b in spans):
            at = text.find(block.start, at + 1)
        if at >= 0 and (not block.at_start_only or not text[:at].strip()) and (best is None or at < best[0]):
            best = (at, len(block.start), block)
    if fence:
        for match in _FENCE.finditer(text, pos):
            if not any(a <= match.start() < b for a, b in spans):
                if best is None or match.start() < best[0]:
                    best = (match.start(), match.end() - match.start(), _FENCED)
                break
    return best


_FENCED = _Block("```", "```", lambda body: None)  # read by _fenced_run, which is given the offered names
# The most text before a fenced call that can be its lead-in ("I will look it up."): a fenced block after more
# than that is part of an answer (an example quoted from a file), never a call.
LEAD_IN_MAX_CHARS = 300


def _fenced_run(text: str, at: int, names: Optional[frozenset[str]], final: bool) -> Optional[list[ToolCall]]:
    """The calls of `text[at:]` when it is nothing but fenced calls (white space between and after them): a
    fenced call counts only at the reply's very end, as Qwen2.5-Coder writes one. While streaming, a run that may
    still become that gives [] (held back); None when it is not such a run (its blocks are then text)."""
    calls: list[ToolCall] = []
    pos = at
    while True:
        rest = text[pos:]
        if not rest.strip():
            return (calls or None) if final else []
        match = _FENCE.match(text, pos + len(rest) - len(rest.lstrip()))
        if match is None:
            start = pos + len(rest) - len(rest.lstrip())
            return [] if not final and _fence_tail(text[start:]) == len(text) - start else None
        end = text.find("```", match.end())
        if end < 0:
            return [] if not final else None
        got = llama3_read(text[match.end() : end], names)
        if got is None:
            return None
        calls += got
        pos = end + 3


def _lead_in(text: str, spans) -> str:
    """`text` without its thinking: what a fenced call's lead-in is measured on."""
    out, pos = [], 0
    for a, b in spans:
        out.append(text[pos:a])
        pos = b
    out.append(text[pos:])
    return "".join(out).strip()


def _split_blocks(text: str, final: bool, blocks: Sequence[_Block], names: Optional[frozenset[str]]) -> Split:
    fence = bool(names)
    spans = _think_spans(text)
    content: list[str] = []
    calls: list[ToolCall] = []
    pos = 0
    while True:
        found = _next_start(text, pos, blocks, fence, spans)
        if found is None:
            rest = text[pos:]
            if final:
                content.append(rest)
                break
            inside_think = bool(spans) and spans[-1][1] == len(text) and not text.endswith(THINK_CLOSE)
            hold = (
                0
                if inside_think
                else max([_could_begin(rest, b.start) for b in blocks] + ([_fence_tail(rest)] if fence else []))
            )
            if (
                any(b.at_start_only for b in blocks)
                and not "".join(content).strip()
                and not calls
                and not rest[: len(rest) - hold].strip()
            ):
                hold = len(rest)  # a reply still all whitespace may yet begin a bare call
            content.append(rest[: len(rest) - hold])
            return Split("".join(content), tuple(calls), pending=hold > 0)
        at, length, block = found
        content.append(text[pos:at])
        if block is _FENCED:
            lead = _lead_in("".join(content), _think_spans("".join(content)))
            run = _fenced_run(text, at, names, final) if len(lead) <= LEAD_IN_MAX_CHARS and "```" not in lead else None
            if run == [] and not final:
                return Split("".join(content), tuple(calls), pending=True)
            if run:
                calls += run
                break
            # Not a call: the block is text, to its closing fence (held back while that is still being written).
            end = text.find("```", at + length)
            if end < 0:
                if not final:
                    return Split("".join(content), tuple(calls), pending=True)
                content.append(text[at:])
                break
            content.append(text[at : end + 3])
            pos = end + 3
            if pos >= len(text):
                break
            continue
        body_from = at + length
        end = text.find(block.end, body_from) if block.end else -1
        if not final and (end < 0 or block.end is None):
            if block.at_start_only and (early := _complete_json_not_call(text[at:], names)) is not None:
                content.append(text[at : at + early])  # a JSON reply that is no call: it is content
                pos = at + early
                blocks = [b for b in blocks if not b.at_start_only]
                continue
            if block.streams:
                return Split("".join(content), tuple(calls), pending=True, open_at=at, open_body=text[body_from:])
            return Split("".join(content), tuple(calls), pending=True)
        body_to = len(text) if end < 0 else end
        got = block.read(text[body_from:body_to])
        stop = body_to if end < 0 else end + len(block.end or "")
        if got is None:
            content.append(text[at:stop])
        else:
            calls += got
        pos = stop
        if pos >= len(text):
            break
    return Split("".join(content), tuple(calls))


def _complete_json_not_call(body: str, names: Optional[frozenset[str]]) -> Optional[int]:
    """Where a bare JSON value at the start of `body` ends, when it is complete and is no call; else None."""
    stripped = len(body) - len(body.lstrip())
    try:
        value, end = json.JSONDecoder().raw_decode(body, stripped)
    except ValueError:
        return None
    if json_calls(json.dumps(value), names) is not None:
        return None
    return end


# -- Harmony (gpt-oss) ------------------------------------------------------------------------------------------

_HARMONY_MESSAGE = re.compile(
    r"(?:<\|start\|>)?([^<]*?)(?:<\|channel\|>((?:[^<]|<\|constrain\|>)*?))?<\|message\|>(.*?)"
    r"(<\|end\|>|<\|call\|>|<\|return\|>|<\|start\|>|$)",
    re.S,
)
_RECIPIENT = re.compile(r"to=functions\.([^\s<]+)")
_HARMONY_MARKERS = ("<|start|>", "<|channel|>", "<|message|>", "<|end|>", "<|call|>", "<|return|>", "<|constrain|>")


def split_harmony(text: str, final: bool, names: Optional[frozenset[str]] = None) -> Split:
    """gpt-oss's messages: `final` (and commentary without a recipient) is content, `analysis` is reasoning, a
    message to `functions.NAME` is a call (read when it ends at `<|call|>`, or at the reply's end)."""
    if not final:
        # A message header still being written (no `<|message|>` after it yet) is held back whole.
        ended = max(text.rfind(m) + len(m) if text.rfind(m) >= 0 else 0 for m in ("<|end|>", "<|call|>", "<|return|>"))
        starts = [at for at in (text.find("<|start|>", ended), text.find("<|channel|>", ended)) if at >= 0]
        header = min(starts, default=-1)
        if header >= 0 and "<|message|>" not in text[header:]:
            return dataclasses.replace(split_harmony(text[:header], True, names), pending=True)
    if "<|message|>" not in text:
        hold = 0 if final else max(_could_begin(text, m) for m in _HARMONY_MARKERS)
        return Split(text[: len(text) - hold], pending=hold > 0)
    content: list[str] = []
    reasoning: list[str] = []
    calls: list = []
    pending = False
    for match in _HARMONY_MESSAGE.finditer(text):
        head = (match.group(1) or "") + " " + (match.group(2) or "")
        body, end = match.group(3), match.group(4)
        if not end and not final:
            pending = True
            hold = max(_could_begin(body, m) for m in _HARMONY_MARKERS)
            body = body[: len(body) - hold]
        if not match.group(0).startswith("<|start|>") and "to=" not in (match.group(1) or ""):
            content.append(match.group(1) or "")  # text before a header is no role: the model wrote it
        recipient = _RECIPIENT.search(head)
        if recipient and names is not None and recipient.group(1) not in names:
            content.append(body)  # a message to a tool that was not offered: the model's text, no call
            continue
        if recipient:
            if end or final:
                args = arguments_text(body.strip())
                if args is not None:
                    calls.append(ToolCall(recipient.group(1), args))
            continue
        channel = (match.group(2) or "").split()[0] if match.group(2) else "final"
        (reasoning if channel == "analysis" else content).append(body)
        if end == "<|start|>":
            break  # a message started without ending the last: the next match reads it
    return Split("".join(content), tuple(calls), "".join(reasoning), pending)


# -- by family --------------------------------------------------------------------------------------------------


def _parameter_types(tools: Sequence[dict]) -> dict[str, dict[str, str]]:
    types: dict[str, dict[str, str]] = {}
    for tool in tools:
        function = tool.get("function", tool) if isinstance(tool, dict) else {}
        props = (function.get("parameters") or {}).get("properties") or {}
        if isinstance(function.get("name"), str) and isinstance(props, dict):
            types[function["name"]] = {
                k: str(v.get("type"))
                for k, v in props.items()
                if isinstance(v, dict) and isinstance(v.get("type"), str)
            }
    return types


def tool_names(tools: Sequence[dict]) -> frozenset[str]:
    return frozenset(_parameter_types(tools)) | frozenset(
        t["function"]["name"]
        for t in tools
        if isinstance(t, dict) and isinstance(t.get("function"), dict) and isinstance(t["function"].get("name"), str)
    )


def split_reply(text: str, family: ToolFormat, tools: Sequence[dict], final: bool = True) -> Split:
    """`text` (the reply so far, or all of it) as content and calls, for a model of `family` offered `tools`. A
    call to a tool that was not offered is no call: it stays in the content, as written."""
    try:
        return _split_reply(text, family, tools, final)
    except RecursionError:  # JSON nested deeper than Python reads (a client's grammar can force it) is no call
        return Split(text)


def _split_reply(text: str, family: ToolFormat, tools: Sequence[dict], final: bool) -> Split:
    names = tool_names(tools) or None
    if family == "harmony":
        return split_harmony(text, final, names)
    if family == "hermes":
        types = _parameter_types(tools)
        # A reply that is just the call's JSON (no tags), naming an offered tool, is a call too: the 1.5B writes
        # that when a tool result is already in the chat.
        blocks = [
            _Block("<tool_call>", "</tool_call>", lambda body: hermes_read(body, types, names), streams=True),
            _Block("{", None, lambda body: llama3_read("{" + body, names), at_start_only=True),
        ]
    elif family == "mistral":
        blocks = [_Block("[TOOL_CALLS]", None, lambda body: mistral_read(body, names))]
    else:
        blocks = [
            _Block("<|python_tag|>", None, lambda body: llama3_read(body, names)),
            _Block("{", None, lambda body: llama3_read("{" + body, names), at_start_only=True),
        ]
    return _split_blocks(text, final, blocks, names)
