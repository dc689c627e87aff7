"""Writes replies into the transcript's QTextDocument as Markdown whose every shown character keeps its token's
origin and round (see markdown.blocks), with code blocks in monospace and Pygments colours, tables, lists, links,
maths in an italic serif (display maths centred), and refused proposals as ghost text when they are shown: a finished reply whole, a streaming one block by block
(markdown.streaming).

GUI thread only.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional, Sequence

from PySide6.QtCore import Qt
from PySide6.QtGui import (
    QColor,
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextFrame,
    QTextFrameFormat,
    QTextLength,
    QTextTableFormat,
)

from app.store.provenance import RoundRecord
from app.ui.widgets import style
from app.ui.transcript.links.action_links import ActionLinks
from app.ui.transcript import long_text
from app.ui.transcript.markdown.code_colors import code_colours
from app.ui.transcript.long_text import LINE_SEPARATOR
from app.ui.transcript.markdown.blocks import Block, Inline, InlineStyle, parse_markdown
from app.ui.transcript.reply.chars import NO_ROUND, ReplyChars
from app.ui.transcript.format import (
    BASE_BACKGROUND_PROPERTY,
    GHOST_PROPERTY,
    GHOST_ROUNDS_PROPERTY,
    LINE_BREAK_PROPERTY,
    MESSAGE_PROPERTY,
    PROVENANCE_PROPERTY,
    ROUND_PROPERTY,
)

_ALIGN = {"center": Qt.AlignmentFlag.AlignHCenter, "right": Qt.AlignmentFlag.AlignRight}


@dataclass
class ReplyMarks:
    """The reply being written: its key, the origin and round of each character, its rounds, and the next refused
    proposal to place (a streaming reply keeps one and adds to it)."""

    key: int
    chars: ReplyChars
    rounds: Sequence[RoundRecord]
    next_ghost: int = 0

    def ghosts_before(self, offset: int) -> str:
        """The rounds ("3" or "3,4") whose refused proposals go before the character at `offset` (each once)."""
        ghosts = self.chars.ghosts
        start = self.next_ghost
        while self.next_ghost < len(ghosts) and ghosts[self.next_ghost][0] <= offset:
            self.next_ghost += 1
        return ",".join(str(r) for _, r in ghosts[start : self.next_ghost])


class ReplyWriter:
    """Writes replies into a QTextDocument; remembers the code blocks it wrote, for their Copy links."""

    def __init__(self, base: QFont, links: ActionLinks):
        self.base = base
        self.links = links  # the app's own links (a reply's links never get this transcript's key)
        self.mono = style.monospace_font(max(8.0, base.pointSizeF() - 0.5))
        self.highlight = True
        self.show_refused = False
        self.code_blocks: list[str] = []
        self.reuse_block = False  # the next block goes into the empty one Qt keeps after a code frame or table

    # ----- formats

    def set_background(self, fmt: QTextCharFormat) -> None:
        # A line break keeps its origin but shows no highlight: it would be a stray sliver at the end of its line.
        color = (
            style.origin_color(fmt.stringProperty(PROVENANCE_PROPERTY))
            if self.highlight and not fmt.boolProperty(LINE_BREAK_PROPERTY)
            else None
        )
        if color is not None:
            fmt.setBackground(color)
            return
        base = fmt.stringProperty(BASE_BACKGROUND_PROPERTY)
        if base:
            fmt.setBackground(QColor(base))
        else:
            fmt.clearBackground()

    def action_format(self, action: str, argument: object = "") -> QTextCharFormat:
        """The format of one of the app's own links (see action_links)."""
        link = QTextCharFormat()
        link.setAnchor(True)
        link.setAnchorHref(self.links.href(action, argument))
        link.setForeground(QColor(style.ACCENT))
        return link

    def _set_mono(self, fmt: QTextCharFormat) -> None:
        fmt.setFont(self.mono, QTextCharFormat.FontPropertiesInheritanceBehavior.FontPropertiesSpecifiedOnly)
        fmt.setFontFamilies(self.mono.families())

    def _char_format(
        self,
        origin: str,
        round_index: int,
        key: int,
        inline: InlineStyle,
        block: Block,
        colour: Optional[str],
        ghost_rounds: str,
        line_break: bool = False,
    ) -> QTextCharFormat:
        fmt = QTextCharFormat()
        if line_break:
            fmt.setProperty(LINE_BREAK_PROPERTY, True)
        if origin:
            fmt.setProperty(PROVENANCE_PROPERTY, origin)
            fmt.setProperty(MESSAGE_PROPERTY, key)
            if round_index != NO_ROUND:
                fmt.setProperty(ROUND_PROPERTY, round_index)
        if ghost_rounds:
            fmt.setProperty(GHOST_ROUNDS_PROPERTY, ghost_rounds)
        if block.kind == "code" or inline.code:
            self._set_mono(fmt)
        if inline.code and block.kind != "code":
            fmt.setProperty(BASE_BACKGROUND_PROPERTY, style.INLINE_CODE_BACKGROUND)
        if inline.bold or block.kind == "heading":
            fmt.setFontWeight(QFont.Weight.Bold)
        if inline.italic:
            fmt.setFontItalic(True)
        if inline.maths:
            fmt.setFontFamilies(style.MATHS_FONT_FAMILIES)
            fmt.setFontStyleHint(QFont.StyleHint.Serif)
            fmt.setFontItalic(True)
        if inline.strike:
            fmt.setFontStrikeOut(True)
        if block.kind == "heading":
            fmt.setFontPointSize(self.base.pointSizeF() + max(0.0, 4 - block.level) * 1.5)
        if inline.href:
            fmt.setAnchor(True)
            fmt.setAnchorHref(inline.href)
            fmt.setFontUnderline(True)
            fmt.setForeground(QColor(style.ACCENT))
        elif colour:
            fmt.setForeground(QColor(colour))
        elif block.quote:
            fmt.setForeground(QColor(style.TEXT_MUTED))
        self.set_background(fmt)
        return fmt

    # ----- ghost text

    def ghost_format(self, key: int, round_index: int) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setProperty(GHOST_PROPERTY, True)
        fmt.setProperty(MESSAGE_PROPERTY, key)
        fmt.setProperty(ROUND_PROPERTY, round_index)
        fmt.setFontStrikeOut(True)
        fmt.setForeground(QColor(*style.GHOST_TEXT_RGBA))
        return fmt

    def insert_ghosts(
        self, cursor: QTextCursor, key: int, ghost_rounds: str, rounds: Optional[Sequence[RoundRecord]]
    ) -> None:
        """Insert the refused proposals of these rounds ("3,4") at the cursor, as faint struck-through text."""
        if not rounds:
            return
        for part in ghost_rounds.split(","):
            round_index = int(part)
            if 0 <= round_index < len(rounds):
                refused = rounds[round_index].refused_text.replace("\n", "↵")
                if refused:
                    cursor.insertText(refused, self.ghost_format(key, round_index))

    # ----- finished replies

    def insert_reply(
        self, cursor: QTextCursor, key: int, content: str, chars: ReplyChars, rounds: Sequence[RoundRecord]
    ) -> None:
        """Write a finished reply as Markdown at the cursor."""
        reply = ReplyMarks(key, chars, rounds)
        previous: Optional[Block] = None
        for block in parse_markdown(content):
            self.insert_block(cursor, block, reply, previous)
            previous = block

    def insert_block(
        self,
        cursor: QTextCursor,
        block: Block,
        reply: ReplyMarks,
        previous: Optional[Block],
        code_index: Optional[int] = None,
    ) -> None:
        """Write one Markdown block of a reply at the cursor (`previous`: the block before it, which sets the gap
        above it; `code_index`: the Copy link's index a code block written again keeps)."""
        if block.kind == "code":
            self._insert_code_block(cursor, block, reply, code_index)
            return
        if block.kind == "table":
            self._insert_table(cursor, block, reply)
            return
        block_format = QTextBlockFormat()
        gap = previous is not None and not (block.tight and previous.indent and block.indent)
        block_format.setTopMargin(8 if gap else 2)
        self._indent(block_format, block)
        if block.kind == "maths":  # display maths: a line of its own, centred
            block_format.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        self.new_block(cursor, block_format)
        if block.kind == "rule":
            rule = QTextCharFormat()
            rule.setForeground(QColor(style.BORDER))
            cursor.insertText("─" * 24, rule)
            return
        if block.marker:
            marker_format = QTextCharFormat()
            marker_format.setForeground(QColor(style.TEXT_MUTED))
            cursor.insertText(f"{block.marker}  ", marker_format)
        self._insert_inline(cursor, block.inline, block, reply)

    @staticmethod
    def _indent(block_format: QTextBlockFormat, block: Block) -> None:
        margin = 14 * block.quote + (18 * block.indent if block.indent else 0)
        block_format.setLeftMargin(margin)
        if block.marker:
            block_format.setTextIndent(-16)

    def _insert_inline(
        self,
        cursor: QTextCursor,
        inline: Inline,
        block: Block,
        reply: ReplyMarks,
        colours: Optional[list[Optional[str]]] = None,
        header: bool = False,
    ) -> None:
        """Insert shown text in runs of characters that share origin, round, style and colour."""
        chars = reply.chars
        formats: dict[tuple, QTextCharFormat] = {}
        run_key: Optional[tuple] = None
        run_start = 0
        text = inline.text
        for i in range(len(text) + 1):
            if i < len(text):
                offset = inline.offsets[i]
                if 0 <= offset < len(chars.origins):
                    origin, round_index, ghosts = (
                        chars.origins[offset],
                        chars.rounds[offset],
                        reply.ghosts_before(offset),
                    )
                else:
                    origin, round_index, ghosts = "", NO_ROUND, ""
                key = (origin, round_index, inline.styles[i], colours[i] if colours else None, ghosts, text[i] == "\n")
                if key == run_key:
                    continue
            if run_key is not None:
                fmt = formats.get(run_key)
                if fmt is None:
                    origin_, round_, inline_style, colour_, ghosts_, line_break = run_key
                    if header:
                        inline_style = replace(inline_style, bold=True)
                    fmt = self._char_format(
                        origin_, round_, reply.key, inline_style, block, colour_, ghosts_, line_break
                    )
                    formats[run_key] = fmt
                if run_key[4] and self.show_refused:
                    self.insert_ghosts(cursor, reply.key, run_key[4], reply.rounds)
                long_text.insert_text(cursor, text[run_start:i].replace("\n", LINE_SEPARATOR), fmt)
            if i < len(text):
                run_key, run_start = key, i

    def _insert_code_block(
        self, cursor: QTextCursor, block: Block, reply: ReplyMarks, index: Optional[int] = None
    ) -> None:
        frame, inner, _index = self.open_code_block(cursor, block, index)
        colours = code_colours(block.inline.text, block.language, style.current().code_style)
        self._insert_inline(inner, block.inline, block, reply, colours=colours)
        self.continue_after(cursor, frame.lastPosition())

    def insert_text_part(
        self,
        cursor: QTextCursor,
        inline: Inline,
        block: Block,
        reply: ReplyMarks,
        colours: Optional[list[Optional[str]]] = None,
    ) -> None:
        """Write part of a block's text at the cursor (a streaming block's new text; a code block's in these
        colours), as insert_block writes its whole text."""
        self._insert_inline(cursor, inline, block, reply, colours=colours)

    def open_code_block(
        self, cursor: QTextCursor, block: Block, index: Optional[int] = None
    ) -> tuple[QTextFrame, QTextCursor, int]:
        """A code block's frame with its language and Copy link (`index`: the Copy link's, when written again),
        the cursor where its code goes, and the Copy link's index."""
        self.reuse_block = False
        code = block.inline.text
        if index is None or not 0 <= index < len(self.code_blocks):
            index = len(self.code_blocks)
            self.code_blocks.append(code)
        else:
            self.code_blocks[index] = code
        frame_format = QTextFrameFormat()
        frame_format.setBackground(QColor(style.CODE_BACKGROUND))
        frame_format.setBorder(1)
        frame_format.setBorderBrush(QColor(style.BORDER))
        frame_format.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        frame_format.setPadding(10)
        frame_format.setTopMargin(8)
        frame_format.setBottomMargin(4)
        frame_format.setLeftMargin(14 * block.quote + 18 * block.indent)
        frame_format.setWidth(QTextLength(QTextLength.Type.PercentageLength, 100))
        frame = cursor.insertFrame(frame_format)
        inner = frame.firstCursorPosition()
        label = style.muted_format(self.base)
        inner.insertText(f"{block.language or 'code'}   ", label)
        copy = self.action_format("copy-code", index)
        copy.setFontPointSize(label.fontPointSize())
        inner.insertText("Copy", copy)
        line_format = QTextBlockFormat()
        line_format.setTopMargin(6)
        inner.insertBlock(line_format, QTextCharFormat())
        return frame, inner, index

    def _insert_table(self, cursor: QTextCursor, block: Block, reply: ReplyMarks) -> None:
        rows = [row for row in block.rows if row]
        columns = max((len(row) for row in rows), default=0)
        if not columns:
            return
        self.reuse_block = False
        table_format = QTextTableFormat()
        table_format.setBorder(1)
        table_format.setBorderBrush(QColor(style.BORDER))
        table_format.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        table_format.setBorderCollapse(True)
        table_format.setCellPadding(5)
        table_format.setCellSpacing(0)
        table_format.setTopMargin(8)
        table_format.setBottomMargin(4)
        table_format.setLeftMargin(14 * block.quote + 18 * block.indent)
        table_format.setHeaderRowCount(block.header_rows)
        table = cursor.insertTable(len(rows), columns, table_format)
        for r, row in enumerate(rows):
            for c, cell in enumerate(row):
                cell_cursor = table.cellAt(r, c).firstCursorPosition()
                align = _ALIGN.get(block.aligns[c] if c < len(block.aligns) else "")
                if align is not None:
                    cell_format = QTextBlockFormat()
                    cell_format.setAlignment(align)
                    cell_cursor.setBlockFormat(cell_format)
                self._insert_inline(cell_cursor, cell, block, reply, header=r < block.header_rows)
        self.continue_after(cursor, table.lastPosition())

    def continue_after(self, cursor: QTextCursor, last_position: int) -> None:
        # Continue after the frame, still inside the message frame, in the empty block Qt keeps there.
        cursor.setPosition(last_position + 1)
        self.reuse_block = True

    def new_block(self, cursor: QTextCursor, block_format: QTextBlockFormat, fmt=None) -> None:
        """Start a block, reusing the empty one that follows a code frame instead of leaving a blank line."""
        if self.reuse_block:
            self.reuse_block = False
            cursor.setBlockFormat(block_format)
            cursor.setBlockCharFormat(fmt or QTextCharFormat())
        else:
            cursor.insertBlock(block_format, fmt or QTextCharFormat())
