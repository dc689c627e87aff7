"""What an empty transcript says: how to start, and what the two highlights mean. GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor, QFont, QTextBlockFormat, QTextCharFormat, QTextCursor

from app.ui.widgets import style


def insert_welcome(cursor: QTextCursor, base: QFont, viewport_height: int, model_chosen: bool = True) -> None:
    """The empty transcript's words; without a model chosen it says to choose one first, since a message written
    then has nobody to answer it."""
    block_format = QTextBlockFormat()
    block_format.setAlignment(Qt.AlignmentFlag.AlignHCenter)
    block_format.setTopMargin(max(40, viewport_height // 3))
    title = QTextCharFormat()
    title.setFontPointSize(base.pointSizeF() + 6)
    title.setFontWeight(QFont.Weight.DemiBold)
    cursor.insertBlock(block_format, title)
    cursor.insertText("Start a conversation" if model_chosen else "Choose a model to start", title)
    block_format.setTopMargin(10)
    muted = QTextCharFormat()
    muted.setForeground(QColor(style.TEXT_MUTED))
    cursor.insertBlock(block_format, muted)
    first = (
        "Write a message below. The model that answers and its draft are in the bar above; "
        if model_chosen
        else "Pick the model that answers in the Model list above, and its draft beside it; then write a message. "
    )
    cursor.insertText(
        first + "Drafting pays most on edits and repeated text, such as a file you attach and ask to change.",
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
