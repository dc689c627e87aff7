"""A reply's sources in the transcript: its [1], [2] made links to the passages its question was sent with, and a line
under its stats naming each document and passage used. A click asks the window to show the passage in its document
(ChatView.sig_source). GUI thread only.

The citations are found in the reply as rendered (a bracketed number that is one of the sources'), and only the
link is added to their format: their provenance stays as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

from PySide6.QtCore import QRegularExpression
from PySide6.QtGui import QColor, QFont, QTextBlockFormat, QTextCharFormat, QTextCursor

from app.common.units import plural
from app.store.projects.sources import Source
from app.ui.transcript.reply.writer import ReplyWriter
from app.ui.widgets import style

SOURCE_ACTION = "source"
_CITATION = QRegularExpression(r"\[(\d{1,3})\]")


def source_argument(message_id: int, number: int) -> str:
    return f"{message_id}.{number}"


def parse_argument(argument: str) -> Optional[tuple[int, int]]:
    """(message_id, number) from a source link's argument; None for anything else."""
    message, _, number = argument.partition(".")
    try:
        return int(message), int(number)
    except ValueError:
        return None


def source_label(source: Source) -> str:
    """ "[2] guide.md › Install, page 3": what the sources line and the passage's title call it."""
    where = Path(source.path).name
    if source.heading:
        where += f" › {source.heading}"
    if source.page is not None:
        where += f", page {source.page}"
    return where if source.whole else f"[{source.number}] {where}"


def sources_sentence(sources: Sequence[Source]) -> str:
    """What the inspector says a reply was answered from: "Answered from 2 passages of 1 document: [1] a.md ...";
    "" for none."""
    if not sources:
        return ""
    documents = len({source.path for source in sources})
    if all(source.whole for source in sources):
        head = f"Answered from {plural(documents, 'document')}, given whole"
    else:
        head = f"Answered from {plural(len(sources), 'passage')} of {plural(documents, 'document')}"
        head += ", found by meaning and words" if any(s.by_meaning for s in sources) else ", found by their words"
    parts = [f"{source_label(source)} (characters {source.start:,}-{source.end:,})" for source in sources]
    return f"{head}: {'; '.join(parts)}."


def link_citations(
    writer: ReplyWriter, cursor: QTextCursor, start: int, message_id: int, sources: Sequence[Source]
) -> None:
    """Make each [n] of the reply (from `start` to `cursor`'s position) that names one of `sources` a link."""
    by_number = {source.number: source for source in sources if not source.whole}
    end = cursor.position()
    document = cursor.document()
    found = document.find(_CITATION, start)
    while not found.isNull() and found.selectionEnd() <= end:
        number = int(found.selectedText()[1:-1])
        if number in by_number:
            link = writer.action_format(SOURCE_ACTION, source_argument(message_id, number))
            link.setToolTip(f"Show {source_label(by_number[number])}")
            found.mergeCharFormat(link)
        found = document.find(_CITATION, found)


def insert_sources_line(
    writer: ReplyWriter, base: QFont, cursor: QTextCursor, message_id: int, sources: Sequence[Source]
) -> None:
    """ "Sources: [1] guide.md › Install · [2] faq.md" under the reply, each a link to its passage; "Documents,
    whole: ..." for documents that were given whole."""
    muted = style.muted_format(base)
    cursor.insertBlock(QTextBlockFormat(), muted)
    whole = all(source.whole for source in sources)
    cursor.insertText("Documents, whole: " if whole else "Sources: ", muted)
    for n, source in enumerate(sources):
        if n:
            cursor.insertText("  ·  ", muted)
        link: QTextCharFormat = writer.action_format(SOURCE_ACTION, source_argument(message_id, source.number))
        link.setFontPointSize(muted.fontPointSize())
        link.setForeground(QColor(style.ACCENT))
        link.setToolTip(f"{source.path} (characters {source.start:,}-{source.end:,})")
        # "[3]" and its file's name kept on one row (a no-break space; plain text reads it as a space).
        cursor.insertText(source_label(source).replace("] ", "]\u00a0", 1), link)
