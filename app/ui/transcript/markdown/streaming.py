"""The answer of the reply streaming now, written as Markdown while it arrives, so that the finished reply looks the
same: a code block is coloured from its first line, no fence is shown as text, and nothing moves when it ends.

The document is appended to, never rendered again whole: only the last, unfinished block is written again. At each
flush the text after the restart point is parsed again (blocks.py); the blocks already written that did not change
stay, and from the first block that changed on (in practice the last) is written again. The restart point is the
start of a block after a blank line that follows a block outside any list or quote: nothing written later changes
the blocks before it, so the part parsed stays short. The last block grows at its end: a code block's finished
lines (all but the last few characters of a long one), or all but a paragraph's last few characters, are written
once, and only the rest is written again; a code block's new lines are coloured by lexing them with a little code before them, and the whole block is coloured once
more when it closes, as the finished reply colours it; while what comes can only be more code (no fence
character), it grows without parsing at all. A last line of only fence characters is held back until its line
ends. Markdown past the limits of long_text is shown as plain text, as the finished reply shows it.
docs/performance.md has the cost per flush. GUI thread only.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from PySide6.QtGui import QColor, QTextBlockFormat, QTextCharFormat, QTextCursor, QTextDocument, QTextFrame

from app.store.provenance import RoundRecord, TokenRecord
from app.ui.transcript import long_text
from app.ui.transcript.markdown.blocks import PLAIN, Block, Inline, nests_too_deep, parse_markdown
from app.ui.transcript.markdown.code_colors import code_colours
from app.ui.transcript.reply.chars import ReplyChars
from app.ui.transcript.reply.writer import ReplyMarks, ReplyWriter
from app.ui.widgets import style

_FENCE_CHARS = frozenset("`~")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_TEXT_KINDS = ("paragraph", "heading")  # blocks of inline text, grown at their end while they stream
# A paragraph's (or a long code line's) last characters, written again at each flush; the rest of a paragraph is
# rewritten only when Markdown restyles it (emphasis that closes, a link completed), so that a long paragraph or
# line costs each flush only what it adds.
_TEXT_REWRITTEN = 256
_LEX_CONTEXT_CHARS = 600  # code lexed before a code block's new lines, for the state they start in
_NO_TEXT = Inline()


class _Place:
    """A place in the document that stays before whatever is written at it later (a paragraph that grows in the
    block Qt keeps after a frame starts where its block does), and follows edits before it (ghost text shown or
    hidden)."""

    def __init__(self, document: QTextDocument, position: int):
        self._cursor = QTextCursor(document)
        self._cursor.setPosition(position)
        self._cursor.setKeepPositionOnInsert(True)

    def position(self) -> int:
        return self._cursor.position()


@dataclass
class _Written:
    """A block written while streaming, and what is needed to write it again from where it starts."""

    block: Block
    start: _Place  # where it starts
    ghost: int  # the reply's next refused proposal before it
    reuse: bool  # whether it went into the empty block Qt keeps after a frame
    code_index: Optional[int] = None  # its Copy link's index, for a code block


@dataclass
class _OpenBlock:
    """The last block, still being written (a code block, a paragraph or a heading): the part of its text written
    for good, and where the rest starts, which each flush writes again."""

    block: Block
    settled: int  # shown characters written for good: all but the last line or last few characters
    tail: _Place  # where the rest starts
    tail_ghost: int  # the reply's next refused proposal there
    code_frame: Optional[QTextFrame] = None  # a code block's frame
    code_index: int = -1  # a code block's Copy link's index


class StreamingAnswer:
    """A streaming reply's answer (or thinking), written as Markdown at the end of its frame. GUI thread only."""

    def __init__(
        self,
        writer: ReplyWriter,
        document: QTextDocument,
        frame: QTextFrame,
        key: int,
        muted: Optional[QColor] = None,
        reuse_first: bool = False,
    ):
        """`muted`: a colour all of it is shown in (the Thinking section's); `reuse_first`: its first block goes
        into the frame's empty last block (a frame of its own) rather than a new one."""
        self._writer = writer
        self._muted = muted
        self._document = document
        self._frame = frame
        self.source = ""
        self.room = long_text.SHOWN_MAX_CHARS  # characters the stream may still show
        self._chars = ReplyChars([], [], [])
        self._marks = ReplyMarks(key, self._chars, [])
        self._own_seen: set[int] = set()
        self._restart = 0  # where in `source` parsing starts: the blocks before it are written for good
        self._previous: Optional[Block] = None  # the last block before the restart point
        self._written: list[_Written] = []
        self._open: Optional[_OpenBlock] = None
        self._plain_written: Optional[int] = None  # characters written as plain text, once Markdown is given up
        self._start = _Place(document, frame.lastPosition())  # where the answer starts
        # The writer's state after the last block written (the writer also writes other messages meanwhile).
        self._end_ghost = 0
        self._end_reuse = reuse_first

    def append(self, tokens: Sequence[TokenRecord], rounds: Sequence[RoundRecord]) -> bool:
        """Add tokens and show them; False once the stream shows no more (past `room`)."""
        self._marks.rounds = rounds
        added = False
        for token in tokens:
            text = token.text
            if not text or self.room <= 0:
                continue
            if len(text) >= self.room:  # the rest streams unseen: the finished reply shows it
                text = text[: self.room]
            self.room -= len(text)
            offset = len(self.source)
            # The target's own token of a round that refused part of its proposal marks where that part goes.
            if token.origin == "target" and token.round >= 0 and token.round not in self._own_seen:
                self._own_seen.add(token.round)
                if token.round < len(rounds) and rounds[token.round].has_refused:
                    self._chars.ghosts.append((offset, token.round))
            self.source += text
            self._chars.origins.extend([token.origin] * len(text))
            self._chars.rounds.extend([token.round] * len(text))
            added = True
        if added:
            self._show()
        return self.room > 0

    # ----- writing

    def _show(self) -> None:
        if self._plain_written is None:
            too_long = long_text.is_too_long(self.source)
            if not too_long and self._grow_code_unparsed():
                return
            if too_long or nests_too_deep(self.source[self._restart :]):
                self._give_up_markdown()
        if self._plain_written is not None:
            self._append_plain()
            return
        blocks = self._parse()
        written = self._written
        changed = 0
        while changed < min(len(written), len(blocks)) and written[changed].block == blocks[changed]:
            changed += 1
        open_block = self._open
        if open_block is not None and open_block.code_frame is not None and len(blocks) > len(written):
            changed = min(changed, len(written) - 1)  # the code block closed: written once more, coloured whole
        if changed == len(written) == len(blocks):
            return
        if (
            open_block is not None
            and changed == len(written) - 1 == len(blocks) - 1
            and self._grows(open_block, blocks[changed])
        ):
            self._grow(open_block, blocks[changed])
            written[changed].block = blocks[changed]
        else:
            self._write_from(changed, blocks)
        self._end_ghost, self._end_reuse = self._marks.next_ghost, self._writer.reuse_block
        self._advance_restart(blocks)

    def _grow_code_unparsed(self) -> bool:
        """Grow an open code block without parsing again when what was added can only be more of its code: the
        block is not in a list or quote and its fence is not indented (its code is the source as it is), and the new
        text holds no fence character (nothing that could close it) and no CR or NUL (which the parser rewrites).
        Then its code is the source after its first line, as the parser gives it."""
        open_block = self._open
        if open_block is None or open_block.code_frame is None:
            return False
        block, source = open_block.block, self.source
        code = block.inline.text
        if block.indent or block.quote or not code:
            return False
        start = block.inline.offsets[0]
        if start < 0:
            return False
        new = source[start + len(code) :]
        fence_line = source.rfind("\n", 0, start - 1) + 1
        if (
            block.inline.offsets[-1] != start + len(code) - 1
            or not source.startswith(code, start)
            or source[fence_line : fence_line + 1] not in _FENCE_CHARS
            or any(ch in new for ch in "`~\r\0")
        ):
            return False
        code = source[start:]
        last_line = code.rfind("\n") + 1
        if last_line and not code[last_line:].strip(" \t"):
            code = code[:last_line]  # a last line of only spaces is no line yet to the parser
        code = code[:-1] if code.endswith("\n") else code
        if code == block.inline.text:
            return True
        self._grow(
            open_block,
            dataclasses.replace(block, inline=Inline(code, list(range(start, start + len(code))), [PLAIN] * len(code))),
        )
        self._written[-1].block = open_block.block
        self._end_ghost, self._end_reuse = self._marks.next_ghost, self._writer.reuse_block
        return True

    def _parse(self) -> list[Block]:
        source = self.source[self._restart :]
        last_line = source[source.rfind("\n") + 1 :]
        if last_line.strip() and set(last_line.strip()) <= _FENCE_CHARS:
            # Perhaps a fence that opens or closes a code block: held back until its line ends, so that no fence
            # is ever shown as text.
            source = source[: len(source) - len(last_line)]
        blocks = parse_markdown(source)
        for block in blocks:
            if self._restart:
                for inline in block.inlines():
                    inline.shifted(self._restart)
        return blocks

    def _write_from(self, index: int, blocks: list[Block]) -> None:
        """Remove the blocks written from `index` on, and write `blocks[index:]` in their place."""
        writer, marks = self._writer, self._marks
        cursor = QTextCursor(self._document)
        old = self._written[index:]
        if old:
            cursor.setPosition(old[0].start.position())
            cursor.setPosition(self._frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
            cursor.removeSelectedText()
            marks.next_ghost, writer.reuse_block = old[0].ghost, old[0].reuse
        else:
            cursor.setPosition(self._frame.lastPosition())
            marks.next_ghost, writer.reuse_block = self._end_ghost, self._end_reuse
        code_indices = [w.code_index for w in old if w.code_index is not None]
        del self._written[index:]
        self._open = None
        first_position = cursor.position()
        cursor.beginEditBlock()
        for n in range(index, len(blocks)):
            block = blocks[n]
            previous = blocks[n - 1] if n else self._previous
            start, ghost, reuse = cursor.position(), marks.next_ghost, writer.reuse_block
            code_index = code_indices.pop(0) if block.kind == "code" and code_indices else None
            if block.kind == "code" and n == len(blocks) - 1:
                code_index = self._write_open_code(cursor, block, code_index)
            elif block.kind in _TEXT_KINDS and n == len(blocks) - 1:
                self._write_open_text(cursor, block, previous)
            else:
                if block.kind == "code" and code_index is None:
                    code_index = len(writer.code_blocks)
                writer.insert_block(cursor, block, marks, previous, code_index)
            self._written.append(
                _Written(block, self._place(start), ghost, reuse, code_index if block.kind == "code" else None)
            )
        self._mute_from(first_position)
        cursor.endEditBlock()

    def _write_open_code(self, cursor: QTextCursor, block: Block, code_index: Optional[int]) -> int:
        """The frame of a code block still being written, and its code so far; its Copy link's index."""
        writer = self._writer
        frame, inner, index = writer.open_code_block(cursor, block, code_index)
        self._open = _OpenBlock(
            dataclasses.replace(block, inline=block.inline.part(0, 0)),
            0,
            self._place(inner.position()),
            self._marks.next_ghost,
            frame,
            index,
        )
        self._grow(self._open, block)
        writer.continue_after(cursor, frame.lastPosition())
        return index

    def _write_open_text(self, cursor: QTextCursor, block: Block, previous: Optional[Block]) -> None:
        """A paragraph or heading still being written: its block, its text but the last few characters, and
        those characters after where the next flush starts writing it again."""
        writer, marks = self._writer, self._marks
        settle = max(0, len(block.inline.text) - _TEXT_REWRITTEN)
        writer.insert_block(cursor, dataclasses.replace(block, inline=block.inline.part(0, settle)), marks, previous)
        tail, tail_ghost = cursor.position(), marks.next_ghost
        writer.insert_text_part(cursor, block.inline.part(settle, len(block.inline.text)), block, marks)
        self._open = _OpenBlock(block, settle, self._place(tail), tail_ghost)

    @staticmethod
    def _grows(open_block: _OpenBlock, block: Block) -> bool:
        """Whether `block` is the open block with more text, the part written for good unchanged."""
        written, settled = open_block.block, open_block.settled
        if open_block.code_frame is not None:
            return (
                block.kind == written.kind == "code"
                and block.language == written.language
                and block.indent == written.indent
                and block.quote == written.quote
                and block.inline.text.startswith(written.inline.text[:settled])
            )
        # Shown text and source offsets alone are compared: markup that styles text (emphasis closing, a link
        # completed) also stops being shown, so a restyled part always differs in them too.
        return (
            dataclasses.replace(block, inline=_NO_TEXT) == dataclasses.replace(written, inline=_NO_TEXT)
            and block.inline.text[:settled] == written.inline.text[:settled]
            and block.inline.offsets[:settled] == written.inline.offsets[:settled]
        )

    def _grow(self, open_block: _OpenBlock, block: Block) -> None:
        """Write the open block's text after the part written for good again: what is now settled, then the rest."""
        writer, marks = self._writer, self._marks
        text, settled, frame = block.inline.text, open_block.settled, open_block.code_frame
        cursor = QTextCursor(self._document)
        start = open_block.tail.position()
        cursor.setPosition(start)
        cursor.setPosition((frame or self._frame).lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()  # laid out once, at its end
        cursor.removeSelectedText()
        marks.next_ghost = open_block.tail_ghost
        colours: Optional[list[Optional[str]]] = None
        if frame is not None:
            # Its whole lines, and all but the last characters of a long line (minified code), are written for good.
            settle = max(settled, text.rfind("\n") + 1, len(text) - _TEXT_REWRITTEN)
            # Lexed from a little before the new text (a docstring or comment that it continues), from a line's start
            # unless that is far back; the whole block is coloured again when it closes.
            context = max(
                0, settled - 2 * _LEX_CONTEXT_CHARS, text.rfind("\n", 0, max(0, settled - _LEX_CONTEXT_CHARS)) + 1
            )
            lexed = code_colours(text[context:], block.language, style.current().code_style)
            colours = lexed[settled - context :] if lexed else None
        else:
            settle = max(settled, len(text) - _TEXT_REWRITTEN)
        split = settle - settled
        writer.insert_text_part(
            cursor, block.inline.part(settled, settle), block, marks, colours[:split] if colours else None
        )
        tail, tail_ghost = cursor.position(), marks.next_ghost
        writer.insert_text_part(
            cursor, block.inline.part(settle, len(text)), block, marks, colours[split:] if colours else None
        )
        self._mute_from(start, frame)
        cursor.endEditBlock()
        open_block.tail, open_block.tail_ghost = self._place(tail), tail_ghost
        open_block.settled, open_block.block = settle, block
        if frame is not None:
            writer.code_blocks[open_block.code_index] = text
        writer.reuse_block = frame is not None  # after a code block's frame, the empty block Qt keeps there

    def _advance_restart(self, blocks: list[Block]) -> None:
        """Move the restart point to the start of the latest block that nothing later can change."""
        for n in range(len(blocks) - 1, 0, -1):
            before, block = blocks[n - 1], blocks[n]
            if before.indent or before.quote or before.lines[1] >= block.lines[0]:
                continue
            # Line breaks as markdown-it counts them (blocks._normalized: CR LF and a lone CR are one each).
            breaks = list(itertools.islice(_LINE_BREAK.finditer(self.source, self._restart), block.lines[0]))
            if len(breaks) < block.lines[0]:
                return
            self._restart = breaks[-1].end() if breaks else self._restart
            self._previous = before
            del self._written[:n]
            return

    def _mute_from(self, position: int, frame: Optional[QTextFrame] = None) -> None:
        """What was just written (from `position` to the end of `frame`, else of the answer), in the muted colour,
        as thinking_section shows a finished reply's thinking."""
        if self._muted is None:
            return
        cursor = QTextCursor(self._document)
        cursor.setPosition(position)
        cursor.setPosition((frame or self._frame).lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        muted = QTextCharFormat()
        muted.setForeground(self._muted)
        cursor.mergeCharFormat(muted)

    def _place(self, position: int) -> _Place:
        return _Place(self._document, position)

    # ----- plain text, past Markdown's limits

    def _give_up_markdown(self) -> None:
        """Show the answer as plain text from now on, as the finished reply will (long_text.insert_plain)."""
        cursor = QTextCursor(self._document)
        cursor.setPosition(self._start.position())
        cursor.setPosition(self._frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self._written.clear()
        self._open = None
        self._plain_written = 0

    def _append_plain(self) -> None:
        assert self._plain_written is not None
        cursor = QTextCursor(self._document)
        cursor.setPosition(self._frame.lastPosition())
        new = self.source[self._plain_written :]
        block_format = QTextBlockFormat()
        block_format.setTopMargin(4 if self._plain_written == 0 else 0)
        if self._plain_written == 0:
            cursor.insertBlock(block_format, QTextCharFormat())
            block_format.setTopMargin(0)
        for n, line in enumerate(new.split("\n")):
            if n:
                cursor.insertBlock(block_format, QTextCharFormat())
            long_text.insert_text(cursor, line, QTextCharFormat())
        self._plain_written = len(self.source)
