"""A reply's Thinking section: the model's reasoning above its answer, folded to one line once the answer starts.

While the reply streams, the thinking is appended to a frame of its own, indented and quiet, highlighted by
origin like the answer. When the first answer token comes the frame is folded to its header ("Thought for 12.3 s
· 412 tokens") unless the setting keeps it open. A finished reply shows the header as a link that opens and folds
the section; the reasoning is rendered from the reply's own record, never re-read from the document. A reply that
ended while thinking says so under it. GUI thread only.
"""

from __future__ import annotations

from typing import Optional, Sequence

from PySide6.QtGui import (
    QColor,
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFrame,
    QTextFrameFormat,
)

from app.common.units import plural
from app.engine.events import GenerationStats
from app.store.provenance import RoundRecord, TokenRecord
from app.ui.transcript import long_text, message_actions
from app.ui.transcript.format import CONTINUABLE, TranscriptMessage
from app.ui.transcript.markdown.streaming import StreamingAnswer
from app.ui.transcript.reply.chars import reply_chars
from app.ui.transcript.reply.writer import ReplyWriter
from app.ui.widgets import style

TOGGLE_ACTION = "thinking"
STOPPED_WHILE_THINKING = "Stopped while thinking: no answer yet."
CONTINUE_GOES_ON = " Continue lets it go on."
ENDED_WHILE_THINKING = "The reply ended inside its thinking: no answer."
# A model that ends its turn inside its thinking answered with it (app.engine.reasoning.splitter).
ANSWERED_IN_THINKING = "The model ended its turn without closing its thinking, so what it wrote is its answer."


def header_words(seconds: float, tokens: int) -> str:
    """E.g. "Thought for 12.3 s · 412 tokens"."""
    return f"Thought for {seconds:.1f} s · {plural(tokens, 'token')}"


def _finished_words(message: TranscriptMessage) -> str:
    stats: Optional[GenerationStats] = message.stats
    tokens = (
        stats.reasoning_tokens if stats is not None and stats.reasoning_tokens else len(message.reasoning_tokens or [])
    )
    return header_words(stats.reasoning_s if stats is not None else 0.0, tokens)


def _frame_format() -> QTextFrameFormat:
    frame_format = QTextFrameFormat()
    frame_format.setLeftMargin(14)
    frame_format.setPadding(4)
    frame_format.setBorder(0)
    frame_format.setTopMargin(2)
    frame_format.setBottomMargin(6)
    return frame_format


def _header_format(writer: ReplyWriter, base: QFont, key: int, link: bool) -> QTextCharFormat:
    fmt = writer.action_format(TOGGLE_ACTION, key) if link else style.muted_format(base)
    fmt.setForeground(QColor(style.TEXT_MUTED))
    fmt.setFontPointSize(style.muted_format(base).fontPointSize())
    fmt.setFontItalic(True)
    if link:
        fmt.setToolTip("Show or hide the model's thinking (Copy and export keep it apart from the answer)")
    return fmt


def _quiet(frame: QTextFrame) -> None:
    """The thinking in the muted colour, so it reads as the model's notes, not its answer (highlights stay)."""
    cursor = frame.firstCursorPosition()
    cursor.setPosition(frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
    muted = QTextCharFormat()
    muted.setForeground(QColor(style.TEXT_MUTED))
    cursor.mergeCharFormat(muted)


def _after(cursor: QTextCursor, frame: QTextFrame) -> None:
    cursor.setPosition(frame.lastPosition() + 1)


def has_thinking(message: TranscriptMessage) -> bool:
    return message.role == "assistant" and bool(message.reasoning)


def ended_words(stats: Optional[GenerationStats], can_continue: bool) -> str:
    """What a reply with thinking and no answer says under its section: stopped mid-thought (Stop, max tokens: it
    has no answer yet, and Continue, where offered, goes on), or ended there."""
    if stats is not None and stats.stop_reason in CONTINUABLE:
        return STOPPED_WHILE_THINKING + (CONTINUE_GOES_ON if can_continue else "")
    return ENDED_WHILE_THINKING


def insert_section(
    writer: ReplyWriter,
    base: QFont,
    cursor: QTextCursor,
    message: TranscriptMessage,
    rounds: Sequence[RoundRecord],
    is_open: bool,
    can_continue: bool = False,
) -> None:
    """A finished reply's section: its header link, and its reasoning when open. `can_continue`: the reply offers
    Continue."""
    block_format = QTextBlockFormat()
    block_format.setTopMargin(4)
    writer.new_block(cursor, block_format, style.muted_format(base))
    arrow = "▾" if is_open else "▸"
    cursor.insertText(
        f"{arrow} {_finished_words(message)}",
        _header_format(writer, base, message.message_id, link=message.message_id >= 0),
    )
    if is_open:
        frame = cursor.insertFrame(_frame_format())
        inner = frame.firstCursorPosition()
        chars = reply_chars(message.reasoning, message.reasoning_tokens, rounds)
        writer.reuse_block = True  # the frame's own first block: no blank line above the thinking
        writer.insert_reply(inner, message.message_id, message.reasoning, chars, rounds)
        _quiet(frame)
        _after(cursor, frame)
    writer.reuse_block = False
    stats = message.stats
    if stats is not None and (stats.ended_in_reasoning or not message.content.strip()):
        note = style.muted_format(base)
        note.setForeground(QColor(style.current().warning_text))
        writer.new_block(cursor, QTextBlockFormat(), note)
        cursor.insertText(ended_words(stats, can_continue), note)
        writer.reuse_block = False


class StreamingThinking:
    """The Thinking section of the reply streaming now: its frame, appended to, and folded when the answer starts."""

    def __init__(self, writer: ReplyWriter, base: QFont, document: QTextDocument, stream_frame: QTextFrame, key: int):
        self._writer = writer
        self._base = base
        self._document = document
        # Laid out as the finished reply's section (insert_section), so that nothing moves when the reply ends.
        cursor = stream_frame.lastCursorPosition()
        block_format = QTextBlockFormat()
        block_format.setTopMargin(4)
        writer.reuse_block = False
        writer.new_block(cursor, block_format, style.muted_format(base))
        cursor.insertText("Thinking…", _header_format(writer, base, key, link=False))
        self._header_start = cursor.position() - len("Thinking…")
        self._header_end = cursor.position()
        self.frame: Optional[QTextFrame] = cursor.insertFrame(_frame_format())
        self._key = key
        # Markdown as it streams, muted as the finished section is (_quiet).
        self._text = StreamingAnswer(
            writer, document, self.frame, key, muted=QColor(style.TEXT_MUTED), reuse_first=True
        )
        self._cut = False

    def append(self, tokens: Sequence[TokenRecord], rounds: Sequence[RoundRecord]) -> None:
        if self.frame is not None and not self._cut and not self._text.append(tokens, rounds):
            self._cut = True  # as long as the answer may show: the rest is kept, and shown once the reply ends
            message_actions.insert_note(self._base, self.frame.lastCursorPosition(), long_text.STREAM_NOT_SHOWN)

    def fold(self, seconds: float, tokens: int) -> None:
        """The answer started: the reasoning goes out of sight, the header says how long it took."""
        if self.frame is None:
            return
        cursor = QTextCursor(self._document)
        cursor.setPosition(self.frame.firstPosition() - 1)
        cursor.setPosition(self.frame.lastPosition() + 1, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
        self.frame = None
        self.retitle(f"▸ {header_words(seconds, tokens)}")

    def retitle(self, words: str) -> None:
        cursor = QTextCursor(self._document)
        cursor.setPosition(self._header_start)
        cursor.setPosition(self._header_end, QTextCursor.MoveMode.KeepAnchor)
        fmt = _header_format(self._writer, self._base, self._key, link=False)
        cursor.insertText(words, fmt)
        self._header_end = self._header_start + len(words)
