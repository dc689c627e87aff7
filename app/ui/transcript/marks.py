"""Walks over the transcript's document by character format: the highlight shown or hidden, refused proposals
(ghost text) shown or hidden, and text read back without ghost text (copying, the streamed reply).

GUI thread only.
"""

from __future__ import annotations

from typing import Callable, Iterator, Mapping, Optional, Sequence

from PySide6.QtGui import QTextCursor, QTextDocument, QTextFormat, QTextFragment

from app.store.provenance import RoundRecord
from app.ui.widgets import style
from app.ui.transcript.format import (
    CONTINUED_PROPERTY,
    GHOST_PROPERTY,
    GHOST_ROUNDS_PROPERTY,
    MESSAGE_PROPERTY,
    PROVENANCE_PROPERTY,
)

HIGHLIGHTED = ("draft", "ngram", "history")


def fragments(document: QTextDocument, start: int = 0, end: Optional[int] = None) -> Iterator[QTextFragment]:
    """The text fragments of the document (inside frames and tables too) that touch [start, end), in order."""
    block = document.findBlock(start) if start else document.begin()
    while block.isValid() and (end is None or block.position() < end):
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            if fragment.isValid():
                yield fragment
            it += 1
        block = block.next()


def restyle(document: QTextDocument, wanted: Callable, restyle_format: Callable) -> None:
    """Give every fragment whose format `wanted` accepts the format `restyle_format` makes of it."""
    ranges = [(f.position(), f.length(), f.charFormat()) for f in fragments(document) if wanted(f.charFormat())]
    cursor = QTextCursor(document)
    cursor.beginEditBlock()  # laid out once, not once per fragment
    for position, length, fmt in ranges:
        restyle_format(fmt)
        cursor.setPosition(position)
        cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
        cursor.setCharFormat(fmt)
    cursor.endEditBlock()


def recolour_highlights(document: QTextDocument, set_background: Callable) -> None:
    restyle(document, lambda fmt: fmt.stringProperty(PROVENANCE_PROPERTY) in HIGHLIGHTED, set_background)


def remove_ghosts(document: QTextDocument) -> None:
    ranges = [(f.position(), f.length()) for f in fragments(document) if f.charFormat().boolProperty(GHOST_PROPERTY)]
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    for position, length in reversed(ranges):
        cursor.setPosition(position)
        cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
        cursor.removeSelectedText()
    cursor.endEditBlock()


def insert_ghosts(
    document: QTextDocument,
    insert: Callable,
    rounds_by_key: Mapping[int, Sequence[RoundRecord]],
    start: int = 0,
    end: Optional[int] = None,
) -> None:
    """Put refused proposals back before the characters marked for them; `insert(cursor, key, rounds, records)`."""
    anchors = []
    seen = set()
    for fragment in fragments(document, start, end):
        fmt = fragment.charFormat()
        ghost_rounds = fmt.stringProperty(GHOST_ROUNDS_PROPERTY)
        if not ghost_rounds or fragment.position() < start:
            continue
        key = fmt.intProperty(MESSAGE_PROPERTY)
        # A streamed own token split over lines carries the mark on its first piece only; this guards the rest.
        if (key, ghost_rounds) not in seen:
            seen.add((key, ghost_rounds))
            anchors.append((fragment.position(), key, ghost_rounds))
    cursor = QTextCursor(document)
    cursor.beginEditBlock()
    for position, key, ghost_rounds in reversed(anchors):
        cursor.setPosition(position)
        insert(cursor, key, ghost_rounds, rounds_by_key.get(key))
    cursor.endEditBlock()


def visible_text(document: QTextDocument, start: int, end: int) -> str:
    """The text in [start, end) as a reader sees it to copy: ghost text left out, one line per block."""
    lines: list[str] = []
    block = document.findBlock(start)
    while block.isValid() and block.position() < end:
        pieces = []
        it = block.begin()
        while not it.atEnd():
            fragment = it.fragment()
            it += 1
            if not fragment.isValid() or fragment.charFormat().boolProperty(GHOST_PROPERTY):
                continue
            lo, hi = fragment.position(), fragment.position() + fragment.length()
            if hi <= start or lo >= end:
                continue
            pieces.append(fragment.text()[max(0, start - lo) : min(hi, end) - lo])
        if lines and block.blockFormat().boolProperty(CONTINUED_PROPERTY):
            lines[-1] += "".join(pieces)  # a long line cut into blocks (long_text.py) is one line again
        else:
            lines.append("".join(pieces))
        block = block.next()
    return "\n".join(lines).replace("\u2028", "\n").replace("\u00a0", " ")


def highlighted_text(document: QTextDocument, origins: Sequence[str] = HIGHLIGHTED) -> str:
    """All text that shows the highlight of one of these origins, in document order."""
    colours = {colour.rgba() for origin in origins if (colour := style.origin_color(origin)) is not None}
    pieces = []
    for fragment in fragments(document):
        fmt = fragment.charFormat()
        if fmt.hasProperty(QTextFormat.Property.BackgroundBrush) and fmt.background().color().rgba() in colours:
            pieces.append(fragment.text())
    return "".join(pieces)
