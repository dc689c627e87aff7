"""The quiet line beside a message's author: when it was written and how long it is, and, for a message that was
regenerated or edited, the switcher between its versions ("‹ 2/3 ›").

When: relative today ("just now", "12 min ago", "3 h ago"), a date before that; the tooltip has the full date and
time. Length: a reply's tokens are in its stats row, under it (what the model wrote); a user message shows its
characters, since counting its tokens would take a round trip to the engine for every message shown. GUI thread only.
"""

from __future__ import annotations

import datetime
import time
from typing import Optional

from PySide6.QtGui import QColor, QFont, QTextCursor

from app.common.units import plural
from app.ui.transcript.format import TranscriptMessage
from app.ui.transcript.reply.writer import ReplyWriter
from app.ui.widgets import style

# The actions of the switcher's links (app links, whose argument is the shown version's message id).
PREVIOUS_VERSION = "version-previous"
NEXT_VERSION = "version-next"
SWITCH_KEYS = "Alt+Left / Alt+Right"


def when_text(created_at: float, now: Optional[float] = None) -> str:
    """'just now', '12 min ago', '3 h ago' today; '2 Dec' this year; '2 Dec 2025' before."""
    now = time.time() if now is None else now
    moment = datetime.datetime.fromtimestamp(created_at)
    today = datetime.datetime.fromtimestamp(now)
    if moment.date() == today.date() and created_at <= now + 60:
        seconds = max(0, int(now - created_at))
        if seconds < 60:
            return "just now"
        if seconds < 3600:
            return f"{seconds // 60} min ago"
        return f"{seconds // 3600} h ago"
    day = f"{moment.day} {moment:%b}"
    return day if moment.year == today.year else f"{day} {moment.year}"


def when_tooltip(created_at: float) -> str:
    moment = datetime.datetime.fromtimestamp(created_at)
    return f"Written {moment:%A} {moment.day} {moment:%B %Y, %H:%M:%S}"


def length_text(message: TranscriptMessage) -> tuple[str, str]:
    """(shown, tooltip) for the message's length; ("", "") when it has none to tell."""
    if message.role == "assistant":
        return "", ""  # the reply's stats row under it says its tokens (GenerationStats.tokens)
    chars = len(message.content)
    return plural(chars, "character"), "Characters of the message as written (attached files not counted)"


def insert_meta(writer: ReplyWriter, base: QFont, cursor: QTextCursor, message: TranscriptMessage) -> None:
    """After the author's name: the switcher (when there are versions), the time, the length."""
    muted = style.muted_format(base)
    if message.versions is not None:
        insert_switcher(writer, base, cursor, message.message_id, *message.versions)
    parts: list[tuple[str, str]] = []
    if message.created_at:
        parts.append((when_text(message.created_at), when_tooltip(message.created_at)))
    length, length_tip = length_text(message)
    if length:
        parts.append((length, length_tip))
    for text, tip in parts:
        cursor.insertText("  ·  ", muted)
        fmt = style.muted_format(base)
        fmt.setToolTip(tip)
        cursor.insertText(text, fmt)


def insert_switcher(
    writer: ReplyWriter, base: QFont, cursor: QTextCursor, message_id: int, index: int, count: int
) -> None:
    """ "‹ 2/3 ›": each arrow a link while there is a version that way, a faint arrow otherwise."""
    muted = style.muted_format(base)
    cursor.insertText("    ", muted)
    _insert_arrow(writer, base, cursor, message_id, "‹", PREVIOUS_VERSION, index > 1, "Previous version")
    label = style.muted_format(base)
    label.setToolTip(
        f"Version {index} of {count}: Regenerate and Edit keep every version ({SWITCH_KEYS} switches the newest)"
    )
    cursor.insertText(f" {index}/{count} ", label)
    _insert_arrow(writer, base, cursor, message_id, "›", NEXT_VERSION, index < count, "Next version")


def _insert_arrow(
    writer: ReplyWriter,
    base: QFont,
    cursor: QTextCursor,
    message_id: int,
    arrow: str,
    action: str,
    enabled: bool,
    tip: str,
) -> None:
    fmt = writer.action_format(action, message_id) if enabled else style.muted_format(base)
    fmt.setFontPointSize(base.pointSizeF() + 1)
    fmt.setFontWeight(QFont.Weight.Bold)
    if not enabled:
        fmt.setForeground(QColor(style.current().text_disabled))
    fmt.setToolTip(tip if enabled else "")
    cursor.insertText(f" {arrow} ", fmt)
