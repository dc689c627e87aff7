"""The links under a message (Copy, Edit, Regenerate, Continue, Compare with plain), its stats row, which opens the
reply's inspector, and the line a comparison writes: how they are written into the transcript and found again.

Every link is an app link (action_links) whose argument is the message id. GUI thread only.
"""

from __future__ import annotations

from typing import Optional, Sequence, Union

from PySide6.QtGui import QColor, QFont, QTextBlockFormat, QTextCursor, QTextDocument

from app.replies.comparison import ShownComparison, compare_link_label
from app.store.attachments import Attachment
from app.ui.widgets import style
from app.ui.transcript.links.action_links import ActionLinks
from app.ui.transcript.format import TranscriptMessage
from app.ui.transcript.reply.writer import ReplyWriter


def insert_actions(
    writer: ReplyWriter,
    base: QFont,
    cursor: QTextCursor,
    message_id: int,
    actions: Sequence[tuple[str, str]],
    stats_text: str = "",
) -> None:
    """A row of (label, action) links, after the reply's stats when given."""
    block_format = QTextBlockFormat()
    block_format.setTopMargin(6)
    muted = style.muted_format(base)
    writer.new_block(cursor, block_format, muted)
    if stats_text:
        # The stats row opens the reply's inspector: a link that keeps the row's quiet look.
        stats_link = writer.action_format("inspect", message_id)
        stats_link.setForeground(QColor(style.TEXT_MUTED))
        stats_link.setFontPointSize(muted.fontPointSize())
        stats_link.setToolTip("Show this reply's rounds as charts")
        cursor.insertText(stats_text, stats_link)
        cursor.insertText("     ", muted)
    for n, (label, action) in enumerate(actions):
        if n:
            cursor.insertText("   ", muted)
        link = writer.action_format(action, message_id)
        link.setFontPointSize(muted.fontPointSize())
        # Its words joined by no-break spaces: a link never wraps in its middle ("Compare with / plain"); the
        # document's find and plain text read them as spaces.
        cursor.insertText(label.replace(" ", "\u00a0"), link)


def reply_actions(
    message: TranscriptMessage, is_last_reply: bool, can_continue: bool, comparison: Union[ShownComparison, dict, None]
) -> list[tuple[str, str]]:
    """The (label, action) links under a finished reply: Copy; on the last reply Continue (where it can go on) and
    Regenerate; Compare with plain (or its state) on a reply that drafted or was compared before."""
    actions = [("Copy", "copy")]
    if is_last_reply:
        if can_continue:
            actions.append(("Continue", "continue"))
        actions.append(("Regenerate", "regenerate"))
    if message.stats is not None and message.message_id >= 0 and (message.stats.drafted or comparison):
        actions.append((compare_link_label(comparison), "compare"))
    return actions


def insert_attachment_chips(base: QFont, cursor: QTextCursor, attachments: Sequence[Attachment]) -> None:
    """The files sent with a message, one chip each: its name and size on a tinted background."""
    if not attachments:
        return
    block_format = QTextBlockFormat()
    block_format.setTopMargin(6)
    gap = style.muted_format(base)
    chip = style.muted_format(base)
    chip.setBackground(QColor(style.INLINE_CODE_BACKGROUND))
    cursor.insertBlock(block_format, gap)
    cursor.insertText("Attached", gap)
    for attachment in attachments:
        cursor.insertText("  ", gap)
        cursor.insertText(f" {attachment.label} ", chip)


def insert_note(base: QFont, cursor: QTextCursor, text: str) -> None:
    """A quiet line of its own under the actions (a comparison's result)."""
    note = style.muted_format(base)
    cursor.insertBlock(QTextBlockFormat(), note)
    cursor.insertText(text, note)


def find_link(document: QTextDocument, label: str, href: str) -> Optional[QTextCursor]:
    """The link `label` whose href is `href`, selected; None when it is not shown."""
    cursor = QTextCursor(document)
    while True:
        cursor = document.find(label, cursor)
        if cursor.isNull():
            return None
        if cursor.charFormat().anchorHref() == href:
            return cursor


def remove_links(document: QTextDocument, app_links: ActionLinks, links: Sequence[tuple[str, str]]) -> None:
    """Remove every (label, action) app link of these actions, whichever message it is under."""
    for label, action in links:
        prefix = app_links.prefix(action)
        cursor = QTextCursor(document)
        while True:
            cursor = document.find(label, cursor)
            if cursor.isNull():
                break
            if cursor.charFormat().anchorHref().startswith(prefix):
                cursor.removeSelectedText()
