"""Bounded layout, so that no reply freezes the window.

Qt lays out a paragraph (a QTextBlock) as one piece, in time that grows faster than its length, and lays out a
message's frame again on every change inside it. So a long line is cut into blocks of at most BLOCK_CHARS, each
after the first marked CONTINUED_PROPERTY so that copying joins them again; and a reply longer than
MARKDOWN_MAX_CHARS is shown as plain text, only its first SHOWN_MAX_CHARS, with a line that says how much is not
shown (its Copy link and Export still give all of it). A streaming reply stops growing on screen at
SHOWN_MAX_CHARS the same way. docs/performance.md has the measurements behind the numbers. GUI thread only.
"""

from __future__ import annotations

from PySide6.QtGui import QTextBlockFormat, QTextCharFormat, QTextCursor

from app.common.units import format_bytes
from app.ui.transcript.format import CONTINUED_PROPERTY
from app.ui.transcript.markdown.blocks import nests_too_deep

LINE_SEPARATOR = "\u2028"  # a line break inside a block: a paragraph's soft break, a code block's lines
BLOCK_CHARS = 2_000
MARKDOWN_MAX_CHARS = 32_000
# Markdown's cost grows with its markup (each emphasis, link or code span is parsed, then laid out as a run of its
# own): `*a*a*a…` costs far more than prose of its length. Past this many markup characters, plain text.
MARKUP_MAX_CHARS = 3_000
SHOWN_MAX_CHARS = 20_000
_MARKUP = frozenset("*_`[]<>&\\|~!#")


def insert_text(cursor: QTextCursor, text: str, fmt: QTextCharFormat) -> None:
    """Insert `text` (lines joined by LINE_SEPARATOR) at the cursor, so that no block grows past BLOCK_CHARS: at a
    line separator when there is one, as a new line; else mid-line, in a block marked as continuing this one."""
    while len(text) > BLOCK_CHARS - cursor.positionInBlock():
        room = max(0, BLOCK_CHARS - cursor.positionInBlock())
        cut = text.rfind(LINE_SEPARATOR, 0, room)
        if cut >= 0:
            cursor.insertText(text[:cut], fmt)
            text = text[cut + 1 :]
        else:
            cursor.insertText(text[:room], fmt)
            text = text[room:]
        block_format = QTextBlockFormat(cursor.blockFormat())
        block_format.setTopMargin(0)
        block_format.setTextIndent(0)
        block_format.setProperty(CONTINUED_PROPERTY, cut < 0)
        cursor.insertBlock(block_format, fmt)
    if text:
        cursor.insertText(text, fmt)


def insert_plain(cursor: QTextCursor, text: str) -> None:
    """A user's message, or a reply Markdown cannot show in good time or in whole, as plain text: only its first
    SHOWN_MAX_CHARS (the caller adds the line that says so)."""
    block_format = QTextBlockFormat()
    block_format.setTopMargin(4)
    fmt = QTextCharFormat()
    for line in shown_part(text).split("\n"):
        cursor.insertBlock(block_format, fmt)
        insert_text(cursor, line, fmt)
        block_format.setTopMargin(0)


def is_too_long(text: str) -> bool:
    """Shown as plain text (only its first SHOWN_MAX_CHARS): too long, or too full of markup, for Markdown to be
    laid out in good time."""
    if len(text) > MARKDOWN_MAX_CHARS:
        return True
    return len(text) > MARKUP_MAX_CHARS and sum(text.count(ch) for ch in _MARKUP) > MARKUP_MAX_CHARS


def plain_text_note(text: str) -> str:
    """Why a reply is shown as plain text rather than Markdown, in one sentence; "" when Markdown shows it."""
    if is_too_long(text):
        return not_shown_note(text)
    if nests_too_deep(text):
        return (
            "This reply nests quotes or lists deeper than Markdown can show, so it is shown as plain text, "
            "with nothing left out."
        )
    return ""


def shown_part(text: str) -> str:
    return text[:SHOWN_MAX_CHARS]


def not_shown_note(text: str, what: str = "reply") -> str:
    """The line under a reply shown as plain text, or a message shown in part (one sentence; "" for neither)."""
    if len(text) <= SHOWN_MAX_CHARS:
        if what != "reply":
            return ""
        return (
            "This reply has too much Markdown markup to lay out in good time, so it is shown as plain text; "
            "Copy and Export give it as written."
        )
    size = format_bytes(len(text.encode("utf-8", "replace")))
    return (
        f"This {what} is {size} ({len(text):,} characters): only its first {SHOWN_MAX_CHARS:,} characters are "
        "shown, as plain text, so the window stays responsive; Copy and Export give all of it."
    )


STREAM_NOT_SHOWN = (
    "The rest of this reply is not shown while it streams, so the window stays responsive; it is kept whole."
)
