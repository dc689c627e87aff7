"""What an empty transcript says: how to start, and what the two highlights mean. GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QTextBlockFormat, QTextCharFormat, QTextCursor

from app.ui.widgets import style


def insert_welcome(cursor: QTextCursor, base: QFont, viewport_height: int) -> None:
    block_format = QTextBlockFormat()
    block_format.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    block_format.setTopMargin(max(40, viewport_height // 3))
    title = QTextCharFormat()
    title.setFontPointSize(base.pointSizeF() + 6)
    title.setFontWeight(QFont.Weight.DemiBold)
    cursor.insertBlock(block_format, title)
    cursor.insertText("Start a conversation", title)
    block_format.setTopMargin(10)
    muted = QTextCharFormat()
    muted.setForeground(QColor(style.TEXT_MUTED))
    cursor.insertBlock(block_format, muted)
    # True before and after a model is chosen: the transcript does not know which, and need not.
    cursor.insertText(
        "Write a message below. The model that answers and its draft are in the bar above; "
        "drafting pays most on edits and repeated text, such as a file you attach and ask to change.",
        muted,
    )
    cursor.insertBlock(block_format, muted)
    swatch = QTextCharFormat(muted)
    swatch.setForeground(QColor(style.TEXT))
    for text, color in (
        ("Tokens the model kept from ", None),
        (" the draft model ", style.draft_color()),
        (", from ", None),
        (" n-gram copies ", style.ngram_color()),
        (" of earlier text or from ", None),
        (" history ", style.history_color()),
        (" (earlier replies)", None),
        (" are highlighted; hover one to see its round.", None),
    ):
        if color is None:
            cursor.insertText(text, muted)
        else:
            swatch.setBackground(color)
            cursor.insertText(text, swatch)
