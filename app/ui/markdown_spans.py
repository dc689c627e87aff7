"""A small Markdown reader that keeps, for every visible character, which model produced it.

A finished reply is rendered as Markdown (headings, lists, emphasis, inline code, fenced code blocks), but the
highlighting of accepted draft tokens must survive that: the markup characters (`**`, fences, `#`) disappear and
the characters that stay keep their provenance. General-purpose Markdown renderers give back HTML and lose that
mapping, so this reader works on (character, source) pairs directly. Plain Python; no Qt.
"""

from __future__ import annotations

import re
from itertools import groupby
from dataclasses import dataclass, field
from typing import Iterable, Sequence

_FENCE_RE = re.compile(r"^\s{0,3}(`{3,}|~{3,})\s*([\w+#.-]*)")
_HEADING_RE = re.compile(r"^(#{1,6})\s+")
_BULLET_RE = re.compile(r"^(\s*)([-*+])\s+")
_NUMBERED_RE = re.compile(r"^(\s*)(\d{1,3})[.)]\s+")
_QUOTE_RE = re.compile(r"^\s{0,3}>\s?")
_RULE_RE = re.compile(r"^\s{0,3}([-*_])(\s*\1){2,}\s*$")
_PLAIN: frozenset = frozenset()


@dataclass(frozen=True)
class Run:
    """Consecutive characters that share a source ("draft" or "target") and an inline style."""

    text: str
    source: str
    style: frozenset = frozenset()  # of "bold", "italic", "code"


@dataclass
class Block:
    """One rendered block: a paragraph line, heading, list item, quote line, rule or a whole code block."""

    kind: str  # "paragraph", "heading", "bullet", "numbered", "quote", "rule", "code"
    runs: list[Run] = field(default_factory=list)
    level: int = 0  # heading level, or list nesting depth
    marker: str = ""  # "1." for numbered items
    language: str = ""  # code blocks
    gap_before: bool = False  # a blank line (or a block change) precedes it

    @property
    def text(self) -> str:
        return "".join(run.text for run in self.runs)


def char_sources(tokens: Iterable[tuple[str, str]], length: int | None = None) -> list[str]:
    """Per-character provenance from (text, source) tokens, padded with "target" (or cut) to `length`."""
    sources: list[str] = []
    for text, source in tokens:
        sources.extend([source] * len(text))
    if length is not None:
        if len(sources) < length:
            sources.extend(["target"] * (length - len(sources)))
        del sources[length:]
    return sources


def parse_reply(text: str, sources: Sequence[str] | None = None) -> list[Block]:
    """Split a reply into Markdown blocks whose runs carry the provenance of each visible character."""
    if sources is None:
        sources = ["target"] * len(text)
    blocks: list[Block] = []
    lines = _lines_with_offsets(text)
    gap = False
    i = 0
    while i < len(lines):
        line, start = lines[i]
        fence = _FENCE_RE.match(line)
        if fence:
            marker = fence.group(1)
            code_lines: list[tuple[str, int]] = []
            i += 1
            while i < len(lines) and not lines[i][0].strip().startswith(marker[0] * len(marker)):
                code_lines.append(lines[i])
                i += 1
            i += 1  # the closing fence (or past the end of an unfinished reply)
            chars: list[tuple[str, str, frozenset]] = []
            for n, (code_line, offset) in enumerate(code_lines):
                if n:
                    chars.append(("\n", sources[offset - 1], _PLAIN))
                chars.extend((ch, sources[offset + k], _PLAIN) for k, ch in enumerate(code_line))
            blocks.append(Block("code", _group(chars), language=fence.group(2), gap_before=True))
            gap = True
            continue
        if not line.strip():
            gap = True
            i += 1
            continue
        block = _line_block(line, start, sources)
        block.gap_before = gap or (blocks and blocks[-1].kind == "code") or (
            block.kind == "heading" and bool(blocks)
        )
        blocks.append(block)
        gap = block.kind == "heading"
        i += 1
    return blocks


def _lines_with_offsets(text: str) -> list[tuple[str, int]]:
    lines = []
    offset = 0
    for line in text.split("\n"):
        lines.append((line, offset))
        offset += len(line) + 1
    return lines


def _line_block(line: str, start: int, sources: Sequence[str]) -> Block:
    if _RULE_RE.match(line):
        return Block("rule")
    match = _HEADING_RE.match(line)
    if match:
        return Block("heading", _inline_runs(line, start, match.end(), sources), level=len(match.group(1)))
    match = _BULLET_RE.match(line)
    if match:
        depth = len(match.group(1).expandtabs(4)) // 2
        return Block("bullet", _inline_runs(line, start, match.end(), sources), level=depth)
    match = _NUMBERED_RE.match(line)
    if match:
        depth = len(match.group(1).expandtabs(4)) // 2
        runs = _inline_runs(line, start, match.end(), sources)
        return Block("numbered", runs, level=depth, marker=f"{match.group(2)}.")
    match = _QUOTE_RE.match(line)
    if match:
        return Block("quote", _inline_runs(line, start, match.end(), sources))
    return Block("paragraph", _inline_runs(line, start, 0, sources))


def _inline_runs(line: str, line_start: int, begin: int, sources: Sequence[str]) -> list[Run]:
    """Inline markup of one line: `code`, **bold**, *italic*. Unmatched markers stay as literal text."""
    chars: list[tuple[str, str, frozenset]] = []
    bold = italic = False
    i = begin
    n = len(line)
    while i < n:
        ch = line[i]
        if ch == "`":
            close = line.find("`", i + 1)
            if close > i + 1:
                style = _style(bold, italic, code=True)
                chars.extend((line[k], sources[line_start + k], style) for k in range(i + 1, close))
                i = close + 1
                continue
        elif line.startswith("**", i):
            if bold:
                bold = False
                i += 2
                continue
            close = line.find("**", i + 2)
            if close > i + 2 and not line[i + 2].isspace():
                bold = True
                i += 2
                continue
        elif ch == "*":
            if italic:
                italic = False
                i += 1
                continue
            if i + 1 < n and not line[i + 1].isspace() and line.find("*", i + 1) > i + 1:
                italic = True
                i += 1
                continue
        chars.append((ch, sources[line_start + i], _style(bold, italic)))
        i += 1
    return _group(chars)


def _style(bold: bool, italic: bool, code: bool = False) -> frozenset:
    style = set()
    if bold:
        style.add("bold")
    if italic:
        style.add("italic")
    if code:
        style.add("code")
    return frozenset(style)


def _group(chars: list[tuple[str, str, frozenset]]) -> list[Run]:
    """Join consecutive (character, source, style) triples that share source and style into runs."""
    return [
        Run("".join(ch for ch, _, _ in group), source, style)
        for (source, style), group in groupby(chars, key=lambda c: (c[1], c[2]))
    ]
