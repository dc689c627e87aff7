"""The transcript's frames: a message's (a user's as a bubble), a notice's between messages, and the author line
above a message. GUI thread only."""

from __future__ import annotations

from typing import Optional

from PySide6.QtGui import QColor, QFont, QTextCharFormat, QTextCursor, QTextDocument, QTextFrame, QTextFrameFormat

from app.ui.widgets import style


def end_cursor(document: QTextDocument) -> QTextCursor:
    """A cursor at the end of `document`, where the next frame goes."""
    cursor = QTextCursor(document)
    cursor.movePosition(QTextCursor.MoveOperation.End)
    return cursor


def message_frame_format(role: str) -> QTextFrameFormat:
    """The frame of a message by `role`: a user's is a bubble set in from the left."""
    frame_format = QTextFrameFormat()
    frame_format.setTopMargin(6)
    frame_format.setBottomMargin(14)
    if role == "user":
        frame_format.setPadding(10)
        frame_format.setBackground(QColor(style.USER_BUBBLE))
        frame_format.setLeftMargin(72)
    else:
        frame_format.setPadding(2)
    return frame_format


def insert_author(cursor: QTextCursor, base: QFont, label: str) -> None:
    """Who wrote the message, above it."""
    header = style.muted_format(base, smaller=1)
    header.setFontWeight(QFont.Weight.DemiBold)
    cursor.insertText(label or "Assistant", header)


def insert_notice(document: QTextDocument, text: str, kind: str, retry: Optional[QTextCharFormat]) -> QTextFrame:
    """A notice at the end of `document`, in the colours of its `kind` ("error" or "info"), with a Retry link in
    the `retry` format when given."""
    frame_format = QTextFrameFormat()
    frame_format.setTopMargin(4)
    frame_format.setBottomMargin(10)
    frame_format.setPadding(8)
    frame_format.setBackground(QColor(style.ERROR_SOFT if kind == "error" else style.WARNING_SOFT))
    frame_format.setBorder(1)
    theme = style.current()
    frame_format.setBorderBrush(QColor(theme.error_border if kind == "error" else theme.warning_border))
    frame_format.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
    frame = end_cursor(document).insertFrame(frame_format)
    cursor = frame.firstCursorPosition()
    fmt = QTextCharFormat()
    fmt.setForeground(QColor(theme.error if kind == "error" else theme.warning_text))
    cursor.insertText(text, fmt)
    if retry is not None:
        cursor.insertText("   ", fmt)
        cursor.insertText("Retry", retry)
    return frame
