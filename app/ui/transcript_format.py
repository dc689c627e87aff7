"""How the transcript looks: the record of one message, its stats row, and the writer that puts a reply's
Markdown into the document with each character's provenance (draft or target) and code blocks in monospace.

GUI thread only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from PySide6.QtGui import (
    QColor,
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
    QTextFrameFormat,
    QTextLength,
)

from app.engine.events import GenerationStats
from app.provenance import RoundRecord
from app.reply_stats import format_stats, model_label, stats_from_dict  # noqa: F401  (used by the window too)
from app.store import Message
from app.ui import style
from app.ui.markdown_spans import Block

# Char-format properties: where a character came from, and the background it has without draft highlighting.
PROVENANCE_PROPERTY = QTextFormat.Property.UserProperty + 1
BASE_BACKGROUND_PROPERTY = QTextFormat.Property.UserProperty + 2

DRAFT_TOOLTIP = "Draft token: proposed by the drafter and accepted by the target"
TARGET_TOOLTIP = "Target token: produced by the target model itself"


@dataclass
class TranscriptMessage:
    """What the transcript needs to show one message (converted from the store's record)."""

    message_id: int
    role: str  # "user", "assistant", "system"
    content: str
    tokens: Optional[list[tuple[str, str]]] = None  # (text, origin) per token, assistant replies only
    stats: Optional[GenerationStats] = None
    model_label: str = ""
    notes: list[str] = field(default_factory=list)
    token_rounds: Optional[list[int]] = None  # per token, its round's index into `rounds`
    rounds: Optional[list[RoundRecord]] = None
    comparison: Optional[dict] = None


def transcript_message(message: Message) -> TranscriptMessage:
    return TranscriptMessage(
        message_id=message.id,
        role=message.role,
        content=message.content,
        tokens=message.tokens,
        stats=stats_from_dict(message.stats),
        model_label=model_label(message.target_name, message.draft_name),
        token_rounds=message.token_rounds,
        rounds=message.rounds,
        comparison=message.comparison,
    )


# Replies that ended before the model finished them, which the user can ask to continue.
CONTINUABLE = frozenset({"interrupted", "cancelled", "max_tokens", "error"})


class ReplyWriter:
    """Writes replies into a QTextDocument; remembers the code blocks it wrote, for their Copy links."""

    def __init__(self, base: QFont):
        self.base = base
        self.mono = style.monospace_font(max(8.0, base.pointSizeF() - 0.5))
        self.highlight = True
        self.code_blocks: list[str] = []
        self.reuse_block = False  # the next block goes into the empty one Qt keeps after a code frame

    def set_background(self, fmt: QTextCharFormat) -> None:
        if fmt.stringProperty(PROVENANCE_PROPERTY) == "draft" and self.highlight:
            fmt.setBackground(style.draft_color())
            return
        base = fmt.stringProperty(BASE_BACKGROUND_PROPERTY)
        if base:
            fmt.setBackground(QColor(base))
        else:
            fmt.clearBackground()

    def link_format(self, href: str) -> QTextCharFormat:
        link = QTextCharFormat()
        link.setAnchor(True)
        link.setAnchorHref(href)
        link.setForeground(QColor(style.ACCENT))
        return link

    def token_format(self, source: str, style_flags: frozenset = frozenset(), code: bool = False) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setProperty(PROVENANCE_PROPERTY, source)
        fmt.setToolTip(DRAFT_TOOLTIP if source == "draft" else TARGET_TOOLTIP)
        if code or "code" in style_flags:
            fmt.setFont(self.mono, QTextCharFormat.FontPropertiesInheritanceBehavior.FontPropertiesSpecifiedOnly)
            fmt.setFontFamilies(self.mono.families())
        if "code" in style_flags:
            fmt.setProperty(BASE_BACKGROUND_PROPERTY, style.INLINE_CODE_BACKGROUND)
        if "bold" in style_flags:
            fmt.setFontWeight(QFont.Weight.Bold)
        if "italic" in style_flags:
            fmt.setFontItalic(True)
        self.set_background(fmt)
        return fmt

    def insert_markdown(self, cursor: QTextCursor, blocks: list[Block]) -> None:
        for block in blocks:
            if block.kind == "code":
                self.insert_code_block(cursor, block)
                continue
            block_format = QTextBlockFormat()
            block_format.setTopMargin(8 if block.gap_before else 2)
            if block.kind in ("bullet", "numbered"):
                block_format.setLeftMargin(18 + 18 * block.level)
                block_format.setTextIndent(-14)
            elif block.kind == "quote":
                block_format.setLeftMargin(14)
            self.new_block(cursor, block_format)
            if block.kind == "rule":
                rule = QTextCharFormat()
                rule.setForeground(QColor(style.BORDER))
                cursor.insertText("─" * 24, rule)
                continue
            prefix = {"bullet": "•  ", "numbered": f"{block.marker}  "}.get(block.kind, "")
            if prefix:
                marker_format = QTextCharFormat()
                marker_format.setForeground(QColor(style.TEXT_MUTED))
                cursor.insertText(prefix, marker_format)
            for run in block.runs:
                fmt = self.token_format(run.source, run.style)
                if block.kind == "heading":
                    fmt.setFontWeight(QFont.Weight.Bold)
                    fmt.setFontPointSize(self.base.pointSizeF() + max(0.0, 4 - block.level) * 1.5)
                elif block.kind == "quote":
                    fmt.setForeground(QColor(style.TEXT_MUTED))
                cursor.insertText(run.text, fmt)

    def insert_code_block(self, cursor: QTextCursor, block: Block) -> None:
        self.reuse_block = False
        index = len(self.code_blocks)
        self.code_blocks.append(block.text)
        frame_format = QTextFrameFormat()
        frame_format.setBackground(QColor(style.CODE_BACKGROUND))
        frame_format.setBorder(1)
        frame_format.setBorderBrush(QColor(style.BORDER))
        frame_format.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        frame_format.setPadding(10)
        frame_format.setTopMargin(8)
        frame_format.setBottomMargin(4)
        frame_format.setWidth(QTextLength(QTextLength.Type.PercentageLength, 100))
        frame = cursor.insertFrame(frame_format)
        inner = frame.firstCursorPosition()
        label = QTextCharFormat()
        label.setForeground(QColor(style.TEXT_MUTED))
        label.setFontPointSize(max(7.0, self.base.pointSizeF() - 1.5))
        inner.insertText(f"{block.language or 'code'}   ", label)
        copy = self.link_format(f"specchat:copy-code/{index}")
        copy.setFontPointSize(label.fontPointSize())
        inner.insertText("Copy", copy)
        line_format = QTextBlockFormat()
        line_format.setTopMargin(6)
        inner.insertBlock(line_format, QTextCharFormat())
        line_format.setTopMargin(0)
        for run in block.runs:
            lines = run.text.split("\n")
            for n, line in enumerate(lines):
                if n:
                    inner.insertBlock(line_format, QTextCharFormat())
                if line:
                    inner.insertText(line, self.token_format(run.source, code=True))
        # Continue after the code frame, still inside the message frame, in the empty block Qt keeps there.
        cursor.setPosition(frame.lastPosition() + 1)
        self.reuse_block = True

    def new_block(self, cursor: QTextCursor, block_format: QTextBlockFormat, fmt=None) -> None:
        """Start a block, reusing the empty one that follows a code frame instead of leaving a blank line."""
        if self.reuse_block:
            self.reuse_block = False
            cursor.setBlockFormat(block_format)
            cursor.setBlockCharFormat(fmt or QTextCharFormat())
        else:
            cursor.insertBlock(block_format, fmt or QTextCharFormat())
