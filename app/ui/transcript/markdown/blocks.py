"""A reply's Markdown, parsed by markdown-it-py, as blocks of shown characters that each know their source offset.

The highlighting of draft tokens must survive rendering. The shown text is the source minus its markup, in order,
so every shown character is matched to the next equal character of the source; the markup between them (emphasis
markers, link destinations, fences, table pipes) is skipped. Block tokens carry their source lines, and each block
starts matching at its first line, so a mismatch never spreads past one block. Link tails `](url)` are skipped
by their brackets, since a URL often holds the letters that follow the link. An entity such as `&amp;` shows as
one character mapped to the start of its source span. Maths (maths.py) shows as Unicode text that is not the
source's characters: each shown character is matched inside its span alone, and one with no equal there (α from
`\alpha`) maps to the next source character not yet matched. Plain Python (no Qt), so the alignment is tested alone.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field, replace
from functools import lru_cache

from markdown_it import MarkdownIt
from mdit_py_plugins.dollarmath import dollarmath_plugin
from mdit_py_plugins.tasklists import tasklists_plugin
from mdit_py_plugins.texmath import texmath_plugin

from app.ui.transcript.markdown.maths import CLOSING, maths_text

NO_SOURCE = -1  # a shown character with no source character (list markers, checkboxes)
_TASK_RE = re.compile(r"\[[ xX]\]")
_MACRO_RE = re.compile(r"\\[A-Za-z]+")
_EMPHASIS = {
    "em_open": "italic",
    "em_close": "italic",
    "strong_open": "bold",
    "strong_close": "bold",
    "s_open": "strike",
    "s_close": "strike",
}


@dataclass(frozen=True)
class InlineStyle:
    bold: bool = False
    italic: bool = False
    strike: bool = False
    code: bool = False
    maths: bool = False
    href: str = ""  # a link's destination ("" when not a link)


PLAIN = InlineStyle()


@dataclass
class Inline:
    """Shown text with, per character, its offset in the source (or NO_SOURCE) and its inline style."""

    text: str = ""
    offsets: list[int] = field(default_factory=list)
    styles: list[InlineStyle] = field(default_factory=list)

    def add(self, text: str, offsets: list[int], style: InlineStyle) -> None:
        self.text += text
        self.offsets.extend(offsets)
        self.styles.extend([style] * len(text))

    def part(self, start: int, end: int) -> Inline:
        """The shown characters [start, end), with their offsets and styles."""
        return Inline(self.text[start:end], self.offsets[start:end], self.styles[start:end])

    def shifted(self, by: int) -> None:
        """Offsets into a text that starts `by` characters later in the whole (a part parsed alone)."""
        self.offsets = [o + by if o >= 0 else o for o in self.offsets]


@dataclass
class Block:
    """One rendered block. Tables hold their cells in `rows`; every other kind holds its text in `inline`."""

    kind: str  # "paragraph", "heading", "code", "maths" (display maths, a line of its own), "rule", "table"
    inline: Inline = field(default_factory=Inline)
    level: int = 0  # heading level
    indent: int = 0  # list nesting depth of the item it belongs to
    quote: int = 0  # block-quote depth
    marker: str = ""  # shown before the first line of a list item: "•", "3.", "☐", "☑"
    language: str = ""  # code blocks
    rows: list[list[Inline]] = field(default_factory=list)
    aligns: list[str] = field(default_factory=list)  # per table column: "", "left", "center", "right"
    header_rows: int = 0
    tight: bool = False  # an item of a tight list: no gap above it
    # The source lines [first, end) the block was parsed from; not part of what is shown, so not compared.
    lines: tuple[int, int] = field(default=(0, 0), compare=False)

    def inlines(self) -> list[Inline]:
        """Its text: the inline of a block, the cells of a table."""
        return [self.inline, *(cell for row in self.rows for cell in row)]


@lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Raw HTML is shown as text, never interpreted; text_join stays off so entities and escapes keep their markup.
    md = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"]).use(tasklists_plugin)
    # Maths: `$…$` only when no space or digit is next to a `$` inside the span and no digit follows it outside,
    # so prices ("$5 and $10") stay text; `$$…$$` inside a paragraph is maths too. `\(…\)` and `\[…\]` by texmath.
    # A span not closed yet (a streaming reply) stays text until it closes.
    md.use(texmath_plugin, delimiters="brackets")
    # `\[` starts display maths even right after a paragraph's line ("is:\n\\[\n…"), as models write it.
    for rule in md.block.ruler.__rules__:
        if rule.name.startswith("math_block"):
            rule.alt = ["paragraph"]
    md.block.ruler.__cache__ = None
    md.use(dollarmath_plugin, allow_space=False, allow_digits=False, allow_labels=False, double_inline=True)
    md.disable("text_join")
    return md


class _Aligner:
    """Walks the source while the shown text is produced, matching each shown character to its source offset."""

    def __init__(self, source: str):
        self.src = source
        self.pos = 0
        self.limit = len(source)
        self.line_starts = [0] + [i + 1 for i, ch in enumerate(source) if ch == "\n"]

    def line_start(self, line: int) -> int:
        return self.line_starts[line] if line < len(self.line_starts) else len(self.src)

    def line_of(self, offset: int) -> int:
        return bisect.bisect_right(self.line_starts, offset) - 1

    def enter(self, lines, first_line_offset: int = 0) -> None:
        """Match inside these source lines ([start, end) from a token's `map`) from now on."""
        if lines:
            self.pos = max(self.pos, self.line_start(lines[0] + first_line_offset))
            self.limit = max(self.pos, self.line_start(lines[1]))

    def match(self, text: str, newline_as_space: bool = False) -> list[int]:
        offsets = []
        src, limit = self.src, self.limit
        for ch in text:
            found = src.find(ch, self.pos, limit)
            if newline_as_space and ch == " ":
                newline = src.find("\n", self.pos, limit)
                if newline >= 0 and (found < 0 or newline < found):
                    found = newline
            if found < 0:
                offsets.append(NO_SOURCE)
                continue
            offsets.append(found)
            self.pos = found + 1
        return offsets

    def skip(self, markup: str) -> int:
        """Move past the next `markup`; its start, or NO_SOURCE when it is not there."""
        found = self.src.find(markup, self.pos, self.limit) if markup else NO_SOURCE
        if found >= 0:
            self.pos = found + len(markup)
        return found

    def match_maths(self, markup: str, latex: str) -> tuple[str, list[int]]:
        """Move past a maths span opened by `markup`; its shown text and each shown character's source offset."""
        shown = maths_text(latex)
        if self.skip(markup) < 0:
            return shown, [NO_SOURCE] * len(shown)
        while self.pos < self.limit and self.src[self.pos].isspace():
            self.pos += 1
        end = self.src.find(CLOSING.get(markup, markup), self.pos + len(latex.rstrip()), self.limit)
        end = end if end >= 0 else self.limit
        # Letters of macro names (`\frac`) are never matched: `a` of \frac{a}{b} is the one in braces.
        names = {i for m in _MACRO_RE.finditer(self.src, self.pos, end) for i in range(m.start(), m.end())}
        offsets = []
        for ch in shown:
            found = self.src.find(ch, self.pos, end)
            while found in names:
                found = self.src.find(ch, found + 1, end)
            offsets.append(found if found >= 0 else min(self.pos, end - 1))
            if found >= 0:
                self.pos = found + 1
        self.pos = end
        self.skip(CLOSING.get(markup, markup))
        return shown, offsets

    def skip_pattern(self, pattern: re.Pattern) -> None:
        found = pattern.search(self.src, self.pos, self.limit)
        if found:
            self.pos = found.end()

    def skip_link_tail(self) -> None:
        """Move past `]`, then a `(destination "title")` or a `[label]` if one follows."""
        if self.skip("]") < 0:
            return
        src, i = self.src, self.pos
        if i < self.limit and src[i] == "[":
            self.skip("]")
        elif i < self.limit and src[i] == "(":
            depth, quote = 0, ""
            while i < self.limit:
                ch = src[i]
                if ch == "\\":
                    i += 2
                    continue
                if quote:
                    quote = "" if ch == quote else quote
                elif ch in "\"'" and depth == 1:
                    quote = ch
                elif ch == "<" and depth == 1:
                    close = src.find(">", i, self.limit)
                    i = close if close >= 0 else i
                elif ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        self.pos = i + 1
                        return
                i += 1


def _inline(children, aligner: _Aligner) -> tuple[Inline, str]:
    """The shown text of an inline token's children, and the task checkbox it starts with ("", "☐" or "☑")."""
    out = Inline()
    style = PLAIN
    links: list[str] = []  # the markup of open links ("" for [..](..), "autolink" for <..>)
    checkbox = ""
    strip_space = False
    for child in children:
        kind = child.type
        if kind == "text":
            text = child.content
            if strip_space:
                text, strip_space = text.lstrip(" "), False
            out.add(text, aligner.match(text), style)
        elif kind == "text_special":
            start = aligner.skip(child.markup)
            if child.info == "escape" and start >= 0:
                start += 1  # the escaped character itself
            out.add(child.content, [start] * len(child.content), style)
        elif kind in ("softbreak", "hardbreak"):
            out.add("\n", aligner.match("\n"), style)
        elif kind == "code_inline":
            aligner.skip(child.markup)
            out.add(child.content, aligner.match(child.content, newline_as_space=True), replace(style, code=True))
            aligner.skip(child.markup)
        elif kind == "math_inline" or kind == "math_inline_double":
            shown, offsets = aligner.match_maths(child.markup, child.content)
            out.add(shown, offsets, replace(style, maths=True))
        elif kind in _EMPHASIS:
            aligner.skip(child.markup)
            style = replace(style, **{_EMPHASIS[kind]: kind.endswith("_open")})
        elif kind == "link_open":
            links.append(child.markup)
            aligner.skip("<" if child.markup == "autolink" else "[")
            style = replace(style, href=str(child.attrs.get("href", "")))
        elif kind == "link_close":
            if links and links.pop() == "autolink":
                aligner.skip(">")
            else:
                aligner.skip_link_tail()
            style = replace(style, href="")
        elif kind == "image":
            # Shown as its alt text, a link to the picture; the picture itself is never fetched.
            aligner.skip("![")
            linked = replace(style, href=str(child.attrs.get("src", "")))
            alt, _ = _inline(child.children or [], aligner)
            if alt.text:
                out.add(alt.text, alt.offsets, linked)
            else:
                out.add("image", [NO_SOURCE] * 5, linked)
            aligner.skip_link_tail()
        elif kind == "html_inline" and "task-list-item-checkbox" in child.content and not out.text:
            checkbox = "☑" if 'checked="checked"' in child.content else "☐"
            aligner.skip_pattern(_TASK_RE)
            strip_space = True
        elif kind == "html_inline":
            out.add(child.content, aligner.match(child.content), style)
    return out, checkbox


def parse_markdown(text: str) -> list[Block]:
    """The blocks of a reply as shown, each character mapped to its offset in `text`."""
    source, back = _normalized(text)
    aligner = _Aligner(source)
    blocks: list[Block] = []
    lists: list[list] = []  # per open list: [ordered, tight]
    quote = 0
    marker = ""  # the marker of the list item whose first block comes next
    heading = 0
    lines: tuple[int, int] = (0, 0)  # the source lines of the block being read
    table: Block | None = None
    row: list[Inline] = []
    tokens = _tokens(source)
    for n, token in enumerate(tokens):
        kind = token.type
        if kind in ("bullet_list_open", "ordered_list_open"):
            lists.append([kind == "ordered_list_open", _is_tight(tokens, n)])
        elif kind in ("bullet_list_close", "ordered_list_close"):
            lists.pop()
        elif kind == "list_item_open":
            ordered = lists[-1][0] if lists else False
            marker = f"{token.info}{token.markup}" if ordered else "•"
            aligner.enter(token.map)
        elif kind == "blockquote_open":
            quote += 1
        elif kind == "blockquote_close":
            quote -= 1
        elif kind in ("paragraph_open", "heading_open"):
            lines = _lines(token)
            heading = int(token.tag[1:] or 1) if kind == "heading_open" else heading
        elif kind == "heading_close":
            heading = 0
        elif kind == "inline" and table is not None:
            aligner.enter(token.map)
            cell, _ = _inline(token.children or [], aligner)
            row.append(cell)
        elif kind == "inline":
            aligner.enter(token.map)
            inline, checkbox = _inline(token.children or [], aligner)
            block = Block(
                "heading" if heading else "paragraph",
                inline,
                level=heading,
                indent=len(lists),
                quote=quote,
                marker=checkbox or marker,
                tight=bool(lists and lists[-1][1]),
                lines=_lines(token) if token.map else lines,
            )
            marker = ""
            blocks.append(block)
        elif kind in ("fence", "code_block"):
            aligner.enter(token.map, first_line_offset=1 if kind == "fence" else 0)
            code = token.content[:-1] if token.content.endswith("\n") else token.content
            inline = Inline()
            inline.add(code, aligner.match(code), PLAIN)
            language = token.info.split()[0] if token.info.strip() else ""
            blocks.append(Block("code", inline, indent=len(lists), quote=quote, language=language, lines=_lines(token)))
            marker = ""
        elif kind in ("math_block", "math_block_eqno"):
            if token.map:
                aligner.enter(token.map)
            else:  # texmath's `\[` blocks have no source lines: from where the last block ended to its `\]`
                aligner.limit = len(aligner.src)
            first = aligner.line_of(max(aligner.pos, aligner.src.find(token.markup, aligner.pos)))
            inline = Inline()
            shown, offsets = aligner.match_maths(token.markup, token.content)
            inline.add(shown, offsets, replace(PLAIN, maths=True))
            blocks.append(
                Block(
                    "maths",
                    inline,
                    indent=len(lists),
                    quote=quote,
                    lines=_lines(token) if token.map else (first, aligner.line_of(aligner.pos - 1) + 1),
                )
            )
            marker = ""
        elif kind == "hr":
            blocks.append(Block("rule", indent=len(lists), quote=quote, lines=_lines(token)))
        elif kind == "table_open":
            table = Block("table", indent=len(lists), quote=quote, lines=_lines(token))
        elif kind == "tr_open":
            aligner.enter(token.map)
            row = []
        elif kind == "th_open" and table is not None:
            table.aligns.append(_align(token))
        elif kind == "tr_close" and table is not None:
            table.rows.append(row)
        elif kind == "thead_close" and table is not None:
            table.header_rows = len(table.rows)
        elif kind == "table_close" and table is not None:
            blocks.append(table)
            table = None
    if back is not None:
        _map_back(blocks, back)
    return blocks


@lru_cache(maxsize=4)
def _tokens(source: str) -> list:
    # Cached: the view asks nests_too_deep, then parses the same reply (tokens are only read).
    return _parser().parse(source)


def nests_too_deep(text: str) -> bool:
    """True when markdown-it would leave part of `text` out: blocks nested past its limit (20 levels: about 20
    quotes or 10 lists) are skipped, not shown, though they would still be copied. Such text is shown plain."""
    limit = _parser().options["maxNesting"]
    return any(token.level >= limit - 1 for token in _tokens(_normalized(text)[0]))


def _is_tight(tokens, start: int) -> bool:
    """A list is tight when markdown-it hides the paragraphs of its items."""
    for token in tokens[start + 1 :]:
        if token.type == "paragraph_open":
            return token.hidden
        if token.type in ("bullet_list_close", "ordered_list_close"):
            break
    return True


def _lines(token) -> tuple[int, int]:
    return (token.map[0], token.map[1]) if token.map else (0, 0)


def _align(token) -> str:
    style = str(token.attrs.get("style", ""))
    return style.split(":", 1)[1].strip() if style.startswith("text-align:") else ""


def _normalized(text: str) -> tuple[str, list[int] | None]:
    """The text as markdown-it reads it (CR LF and CR become LF, NUL becomes U+FFFD), and, when that changed
    the offsets, each normalized offset's offset in `text`."""
    if "\r" not in text and "\0" not in text:
        return text, None
    source, back = [], []
    i = 0
    while i < len(text):
        ch = text[i]
        back.append(i)
        if ch == "\r":
            source.append("\n")
            i += 2 if text.startswith("\r\n", i) else 1
            continue
        source.append("\ufffd" if ch == "\0" else ch)
        i += 1
    return "".join(source), back


def _map_back(blocks: list[Block], back: list[int]) -> None:
    for block in blocks:
        for inline in block.inlines():
            inline.offsets = [back[o] if o >= 0 else o for o in inline.offsets]
