"""Cutting a document into passages along its own structure: Markdown headings and paragraphs, code by its
top-level functions and classes (Python's `ast`; a line rule for other languages), PDF pages and paragraphs.

First the document is cut into blocks (a paragraph, a function, a fenced code block), each knowing whether it opens
a new part (a heading, a function, a page): then neighbouring blocks of one part are packed into passages of about
TARGET_CHARS, never more than MAX_CHARS. A block longer than that is cut at a line's end, else a sentence's, else a
space. Offsets are characters of the document's text, so a passage can be found and shown where it stands.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from app.documents.records import DocumentText, Passage

TARGET_CHARS = 1_200
MAX_CHARS = 1_500

_HEADING = re.compile(r"(#{1,6})[ \t]+(.+?)[ \t#]*$")
_FENCE = re.compile(r"(```|~~~)")


@dataclass(frozen=True)
class _Block:
    start: int
    end: int
    heading: str
    opens_part: bool


def split_passages(document: DocumentText) -> list[Passage]:
    """The document's passages, in order."""
    text = document.text
    if document.kind in ("markdown", "html", "docx"):
        blocks = _markdown_blocks(text)
    elif document.kind == "code":
        blocks = _code_blocks(text, document.path)
    elif document.kind == "pdf":
        blocks = _page_blocks(text, document.page_starts)
    else:
        blocks = _paragraph_blocks(text, 0, len(text), "", True)
    passages = []
    for start, end, heading in _pack(text, blocks):
        passages.append(Passage(start, end, text[start:end], heading, document.page_at(start)))
    return passages


def _lines(text: str, start: int, end: int):
    """(offset, line without its newline) for each line of text[start:end]."""
    offset = start
    while offset < end:
        newline = text.find("\n", offset, end)
        stop = end if newline < 0 else newline
        yield offset, text[offset:stop]
        offset = stop + 1


def _paragraph_blocks(text: str, start: int, end: int, heading: str, opens_part: bool) -> list[_Block]:
    """Paragraphs (runs of lines between blank lines) of text[start:end]."""
    blocks: list[_Block] = []
    paragraph_start = None
    last_end = start
    for offset, line in _lines(text, start, end):
        if line.strip():
            if paragraph_start is None:
                paragraph_start = offset
            last_end = offset + len(line)
        elif paragraph_start is not None:
            blocks.append(_Block(paragraph_start, last_end, heading, opens_part and not blocks))
            paragraph_start = None
    if paragraph_start is not None:
        blocks.append(_Block(paragraph_start, last_end, heading, opens_part and not blocks))
    return blocks


def _markdown_blocks(text: str) -> list[_Block]:
    """Paragraphs under their headings; a heading opens a part, and a fenced block is one block, never cut at
    its blank lines."""
    blocks: list[_Block] = []
    trail: list[tuple[int, str]] = []  # the headings above: (level, title)
    paragraph_start = None
    last_end = 0
    fence = ""
    opens = True

    def close() -> None:
        nonlocal paragraph_start, opens
        if paragraph_start is not None:
            blocks.append(_Block(paragraph_start, last_end, " > ".join(t for _, t in trail), opens))
            paragraph_start, opens = None, False

    for offset, line in _lines(text, 0, len(text)):
        stripped = line.strip()
        marker = _FENCE.match(stripped)
        heading = None if fence else _HEADING.fullmatch(stripped)
        if heading:
            close()
            level = len(heading.group(1))
            trail = [t for t in trail if t[0] < level] + [(level, heading.group(2)[:80])]
            paragraph_start, last_end, opens = offset, offset + len(line), True
            continue
        if marker:
            fence = "" if fence and stripped.startswith(fence) else (fence or marker.group(1))
        if stripped or fence:
            if paragraph_start is None:
                paragraph_start = offset
            last_end = offset + len(line)
        else:
            close()
    close()
    return blocks


def _code_blocks(text: str, path: str) -> list[_Block]:
    """Python by its top-level statements (each function and class a part of its own); other code by a line
    rule: a line at the margin after a blank line starts a new block, and one that opens a definition a part."""
    if path.endswith((".py", ".pyi")):
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            tree = None
        if tree is not None:
            return _python_blocks(text, tree)
    blocks: list[_Block] = []
    start = None
    last_end = 0
    blank_before = True
    heading = ""
    for offset, line in _lines(text, 0, len(text)):
        at_margin = bool(line) and not line[0].isspace() and line.strip() not in ("}", "};", "end", ")")
        if at_margin and blank_before:
            if start is not None:
                blocks.append(_Block(start, last_end, heading, True))
            start, heading = offset, line.strip()[:80]
        if line.strip():
            if start is None:
                start, heading = offset, line.strip()[:80]
            last_end = offset + len(line)
        blank_before = not line.strip()
    if start is not None:
        blocks.append(_Block(start, last_end, heading, True))
    return blocks


def _python_blocks(text: str, tree: ast.Module) -> list[_Block]:
    line_starts = [0]
    for match in re.finditer("\n", text):
        line_starts.append(match.end())

    def offset(line: int) -> int:
        return line_starts[min(line - 1, len(line_starts) - 1)]

    blocks: list[_Block] = []
    loose_start = None  # imports and constants between definitions, packed together
    loose_end = 0
    for node in tree.body:
        first = min([node.lineno] + [d.lineno for d in getattr(node, "decorator_list", [])])
        start = offset(first)
        end_line = node.end_lineno or node.lineno
        end = offset(end_line + 1) - 1 if end_line < len(line_starts) else len(text)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            if loose_start is not None:
                blocks.append(_Block(loose_start, loose_end, "", True))
                loose_start = None
            kind = "class" if isinstance(node, ast.ClassDef) else "def"
            blocks.append(_Block(start, end, f"{kind} {node.name}", True))
        else:
            loose_start = start if loose_start is None else loose_start
            loose_end = end
    if loose_start is not None:
        blocks.append(_Block(loose_start, loose_end, "", True))
    return blocks


def _page_blocks(text: str, page_starts: tuple[int, ...]) -> list[_Block]:
    """Each page's paragraphs; a page opens a part, so no passage runs over two pages."""
    blocks: list[_Block] = []
    bounds = list(page_starts) + [len(text)]
    for number in range(len(page_starts)):
        blocks.extend(_paragraph_blocks(text, bounds[number], bounds[number + 1], f"page {number + 1}", True))
    return blocks


def _pack(text: str, blocks: list[_Block]) -> list[tuple[int, int, str]]:
    """(start, end, heading) of each passage: blocks of one part packed up to TARGET_CHARS, long ones cut."""
    spans: list[tuple[int, int, str]] = []
    current: tuple[int, int, str] | None = None
    for block in blocks:
        if block.end - block.start > MAX_CHARS:
            start = block.start
            if current and _HEADING.fullmatch(text[current[0] : current[1]]):
                start = current[0]  # the heading opens the first piece
            elif current:
                spans.append(current)
            current = None
            spans.extend((s, e, block.heading) for s, e in _cut(text, start, block.end))
            continue
        if current and not block.opens_part and block.end - current[0] <= TARGET_CHARS:
            current = (current[0], block.end, current[2])
            continue
        if current and _HEADING.fullmatch(text[current[0] : current[1]]) and block.end - current[0] <= TARGET_CHARS:
            current = (current[0], block.end, block.heading)  # a heading alone goes with the part under it
            continue
        if current:
            spans.append(current)
        current = (block.start, block.end, block.heading)
    if current:
        spans.append(current)
    return spans


def _cut(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """text[start:end] in pieces of at most MAX_CHARS, each ending at a line's end, a sentence's or a space."""
    pieces = []
    while end - start > MAX_CHARS:
        window = text[start : start + MAX_CHARS]
        floor = TARGET_CHARS // 2
        cut = window.rfind("\n", floor)
        if cut < 0:
            sentence = max(window.rfind(". ", floor), window.rfind("? ", floor), window.rfind("! ", floor))
            cut = sentence + 1 if sentence >= 0 else window.rfind(" ", floor)
        if cut <= 0:
            cut = MAX_CHARS
        pieces.append((start, start + cut))
        start += cut
        while start < end and text[start].isspace():
            start += 1
    if start < end:
        pieces.append((start, end))
    return pieces
