"""The transcript: a QTextBrowser that streams tokens with their provenance and renders finished replies.

While a reply streams, tokens are appended at the end of the document (never a re-render of the whole document);
accepted draft tokens get a soft green background and every token a tooltip saying who produced it. When the reply
is finished, only that message is rendered again as Markdown, keeping each character's provenance, with code blocks
in monospace and a Copy link. GUI thread only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

from PySide6.QtCore import QUrl, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QTextBlockFormat,
    QTextCharFormat,
    QTextCursor,
    QTextFormat,
    QTextFrame,
    QTextFrameFormat,
    QTextLength,
)
from PySide6.QtWidgets import QApplication, QTextBrowser

from app.engine.events import GenerationStats
from app.ui import style
from app.ui.markdown_spans import Block, char_sources, parse_reply

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
    tokens: Optional[list[tuple[str, str]]] = None  # (text, source) per token, assistant replies only
    stats: Optional[GenerationStats] = None
    model_label: str = ""
    notes: list[str] = field(default_factory=list)


# Replies that ended before the model finished them, which the user can ask to continue.
CONTINUABLE = frozenset({"interrupted", "cancelled", "max_tokens", "error"})


def format_stats(stats: GenerationStats) -> str:
    """The stats row under a finished reply: "41.3 tok/s · 256 tokens · 68% accepted (120/176) · 0.21 s TTFT"."""
    parts = [f"{stats.tokens_per_second:.1f} tok/s", f"{stats.tokens} tokens"]
    if stats.drafted:
        parts.append(f"{stats.acceptance_rate * 100:.0f}% accepted ({stats.accepted}/{stats.drafted} drafted)")
    else:
        parts.append("no speculation")
    if stats.ttft_s:
        parts.append(f"{stats.ttft_s:.2f} s to first token")
    reason = {
        "cancelled": "stopped",
        "max_tokens": "hit the max tokens limit",
        "context_full": "context full",
        "error": "ended by an error",
        "interrupted": "interrupted: SpecChat closed while it was written",
    }.get(stats.stop_reason)
    if reason:
        parts.append(reason)
    return "  ·  ".join(parts)


class ChatView(QTextBrowser):
    """The conversation transcript. GUI thread only."""

    sig_copy_message = Signal(int)
    """The user asked to copy the message with this id."""
    sig_regenerate = Signal(int)
    """The user asked to regenerate the reply with this id."""
    sig_continue = Signal(int)
    """The user asked to continue the unfinished reply with this id."""
    sig_edit_message = Signal(int)
    """The user asked to edit (and resend) the user message with this id."""
    sig_retry = Signal()
    """The user asked to retry the last request after an error."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("Transcript")
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.document().setUndoRedoEnabled(False)
        self.document().setDocumentMargin(24)
        self.setTextInteractionFlags(
            Qt.TextInteractionFlag.TextSelectableByMouse | Qt.TextInteractionFlag.LinksAccessibleByMouse
        )
        self.anchorClicked.connect(self._on_anchor)
        self._highlight = True
        self._code_blocks: list[str] = []
        self._stream_frame: Optional[QTextFrame] = None
        self._stream_in_code = False
        self._stream_line_start = True
        self._stream_pending_line = ""
        self._reuse_block = False
        self._base = self.font()
        self._mono = style.monospace_font(max(8.0, self._base.pointSizeF() - 0.5))

    # ----- highlighting

    def highlighting(self) -> bool:
        return self._highlight

    def set_highlighting(self, enabled: bool) -> None:
        """Show or hide the background of accepted draft tokens everywhere, including a reply still streaming."""
        if enabled == self._highlight:
            return
        self._highlight = enabled
        ranges = []
        block = self.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                if fragment.isValid() and fragment.charFormat().stringProperty(PROVENANCE_PROPERTY) == "draft":
                    ranges.append((fragment.position(), fragment.length(), fragment.charFormat()))
                it += 1
            block = block.next()
        cursor = QTextCursor(self.document())
        for position, length, fmt in ranges:
            self._set_background(fmt)
            cursor.setPosition(position)
            cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
            cursor.setCharFormat(fmt)

    def _set_background(self, fmt: QTextCharFormat) -> None:
        if fmt.stringProperty(PROVENANCE_PROPERTY) == "draft" and self._highlight:
            fmt.setBackground(style.draft_color())
            return
        base = fmt.stringProperty(BASE_BACKGROUND_PROPERTY)
        if base:
            fmt.setBackground(QColor(base))
        else:
            fmt.clearBackground()

    def highlighted_text(self) -> str:
        """All text that currently shows the draft highlight, in document order (tests and accessibility)."""
        pieces = []
        highlight = style.draft_color()
        block = self.document().begin()
        while block.isValid():
            it = block.begin()
            while not it.atEnd():
                fragment = it.fragment()
                fmt = fragment.charFormat()
                if fmt.hasProperty(QTextFormat.Property.BackgroundBrush) and fmt.background().color() == highlight:
                    pieces.append(fragment.text())
                it += 1
            block = block.next()
        return "".join(pieces)

    # ----- building the transcript

    def clear_transcript(self) -> None:
        self._stream_frame = None
        self._code_blocks.clear()
        self.document().clear()
        self.document().setDocumentMargin(24)
        # Qt keeps an empty block before the first frame; make it take no room.
        cursor = QTextCursor(self.document())
        block_format = QTextBlockFormat()
        block_format.setLineHeight(1, QTextBlockFormat.LineHeightTypes.FixedHeight.value)
        cursor.setBlockFormat(block_format)
        tiny = QTextCharFormat()
        tiny.setFontPointSize(1)
        cursor.setBlockCharFormat(tiny)

    def _show_welcome(self) -> None:
        cursor = self._end_cursor()
        block_format = QTextBlockFormat()
        block_format.setAlignment(Qt.AlignmentFlag.AlignHCenter)
        block_format.setTopMargin(max(40, self.viewport().height() // 3))
        title = QTextCharFormat()
        title.setFontPointSize(self._base.pointSizeF() + 6)
        title.setFontWeight(QFont.Weight.DemiBold)
        cursor.insertBlock(block_format, title)
        cursor.insertText("Start a conversation", title)
        block_format.setTopMargin(10)
        muted = QTextCharFormat()
        muted.setForeground(QColor(style.TEXT_MUTED))
        cursor.insertBlock(block_format, muted)
        cursor.insertText("Choose a model above, and a small draft model of the same family for speculative decoding.",
                          muted)
        cursor.insertBlock(block_format, muted)
        cursor.insertText("Tokens the draft proposed and the model accepted are ", muted)
        swatch = QTextCharFormat(muted)
        swatch.setBackground(style.draft_color())
        swatch.setForeground(QColor(style.TEXT))
        cursor.insertText(" highlighted in green ", swatch)
        cursor.insertText(".", muted)

    def show_messages(self, messages: Sequence[TranscriptMessage]) -> None:
        """Render a whole conversation (opening a chat; never used while a reply streams)."""
        self.setUpdatesEnabled(False)
        try:
            self.clear_transcript()
            last_assistant = max((m.message_id for m in messages if m.role == "assistant"), default=None)
            for message in messages:
                self.add_message(message, is_last_reply=message.message_id == last_assistant)
            if not any(m.role != "system" for m in messages):
                self._show_welcome()
        finally:
            self.setUpdatesEnabled(True)
        self.scroll_to_end()

    def add_message(self, message: TranscriptMessage, is_last_reply: bool = False) -> None:
        if message.role == "system":
            return
        if message.role == "user":
            self._hide_regenerate_links()  # the reply above is no longer the last one
        frame = self._append_frame(message.role)
        cursor = frame.firstCursorPosition()
        self._render_message(cursor, message, is_last_reply)

    def add_notice(self, text: str, kind: str = "info", retry: bool = False) -> None:
        """A line between messages: the context was trimmed, a generation failed (with a Retry link)..."""
        frame_format = QTextFrameFormat()
        frame_format.setTopMargin(4)
        frame_format.setBottomMargin(10)
        frame_format.setPadding(8)
        frame_format.setBackground(QColor(style.ERROR_SOFT if kind == "error" else style.WARNING_SOFT))
        frame_format.setBorder(1)
        frame_format.setBorderBrush(QColor("#fecaca" if kind == "error" else "#fde68a"))
        frame_format.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        cursor = self._end_cursor()
        frame = cursor.insertFrame(frame_format)
        cursor = frame.firstCursorPosition()
        fmt = QTextCharFormat()
        fmt.setForeground(QColor(style.ERROR if kind == "error" else "#92400e"))
        cursor.insertText(text, fmt)
        if retry:
            cursor.insertText("   ", fmt)
            cursor.insertText("Retry", self._link_format("specchat:retry"))
        self.scroll_to_end()

    def _append_frame(self, role: str) -> QTextFrame:
        frame_format = QTextFrameFormat()
        frame_format.setTopMargin(6)
        frame_format.setBottomMargin(14)
        if role == "user":
            frame_format.setPadding(10)
            frame_format.setBackground(QColor(style.USER_BUBBLE))
            frame_format.setLeftMargin(72)
        else:
            frame_format.setPadding(2)
        return self._end_cursor().insertFrame(frame_format)

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _render_message(self, cursor: QTextCursor, message: TranscriptMessage, is_last_reply: bool) -> None:
        self._reuse_block = False
        header = QTextCharFormat()
        header.setFontWeight(QFont.Weight.DemiBold)
        header.setForeground(QColor(style.TEXT_MUTED))
        header.setFontPointSize(max(7.0, self._base.pointSizeF() - 1))
        label = "You" if message.role == "user" else (message.model_label or "Assistant")
        cursor.insertText(label, header)
        if message.role == "user":
            self._insert_plain_text(cursor, message.content)
            self._insert_actions(cursor, message, [("Copy", "copy"), ("Edit", "edit")])
            return
        tokens = message.tokens if message.tokens else [(message.content, "target")]
        sources = char_sources(tokens, len(message.content))
        self._insert_markdown(cursor, parse_reply(message.content, sources))
        actions = [("Copy", "copy")]
        if is_last_reply:
            if message.stats is not None and message.stats.stop_reason in CONTINUABLE:
                actions.append(("Continue", "continue"))
            actions.append(("Regenerate", "regenerate"))
        stats_text = format_stats(message.stats) if message.stats else ""
        self._insert_actions(cursor, message, actions, stats_text)

    def _insert_plain_text(self, cursor: QTextCursor, text: str) -> None:
        block_format = QTextBlockFormat()
        block_format.setTopMargin(4)
        fmt = QTextCharFormat()
        for n, line in enumerate(text.split("\n")):
            cursor.insertBlock(block_format, fmt)
            cursor.insertText(line, fmt)
            block_format.setTopMargin(0)

    def _insert_actions(self, cursor: QTextCursor, message: TranscriptMessage, actions, stats_text: str = "") -> None:
        block_format = QTextBlockFormat()
        block_format.setTopMargin(6)
        muted = QTextCharFormat()
        muted.setForeground(QColor(style.TEXT_MUTED))
        muted.setFontPointSize(max(7.0, self._base.pointSizeF() - 1.5))
        self._new_block(cursor, block_format, muted)
        if stats_text:
            cursor.insertText(stats_text + "     ", muted)
        for n, (label, action) in enumerate(actions):
            if n:
                cursor.insertText("   ", muted)
            link = self._link_format(f"specchat:{action}/{message.message_id}")
            link.setFontPointSize(muted.fontPointSize())
            cursor.insertText(label, link)

    def _link_format(self, href: str) -> QTextCharFormat:
        link = QTextCharFormat()
        link.setAnchor(True)
        link.setAnchorHref(href)
        link.setForeground(QColor(style.ACCENT))
        return link

    def _token_format(self, source: str, style_flags: frozenset = frozenset(), code: bool = False) -> QTextCharFormat:
        fmt = QTextCharFormat()
        fmt.setProperty(PROVENANCE_PROPERTY, source)
        fmt.setToolTip(DRAFT_TOOLTIP if source == "draft" else TARGET_TOOLTIP)
        if code or "code" in style_flags:
            fmt.setFont(self._mono, QTextCharFormat.FontPropertiesInheritanceBehavior.FontPropertiesSpecifiedOnly)
            fmt.setFontFamilies(self._mono.families())
        if "code" in style_flags:
            fmt.setProperty(BASE_BACKGROUND_PROPERTY, style.INLINE_CODE_BACKGROUND)
        if "bold" in style_flags:
            fmt.setFontWeight(QFont.Weight.Bold)
        if "italic" in style_flags:
            fmt.setFontItalic(True)
        self._set_background(fmt)
        return fmt

    def _insert_markdown(self, cursor: QTextCursor, blocks: list[Block]) -> None:
        for block in blocks:
            if block.kind == "code":
                self._insert_code_block(cursor, block)
                continue
            block_format = QTextBlockFormat()
            block_format.setTopMargin(8 if block.gap_before else 2)
            if block.kind in ("bullet", "numbered"):
                block_format.setLeftMargin(18 + 18 * block.level)
                block_format.setTextIndent(-14)
            elif block.kind == "quote":
                block_format.setLeftMargin(14)
            self._new_block(cursor, block_format)
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
                fmt = self._token_format(run.source, run.style)
                if block.kind == "heading":
                    fmt.setFontWeight(QFont.Weight.Bold)
                    fmt.setFontPointSize(self._base.pointSizeF() + max(0.0, 4 - block.level) * 1.5)
                elif block.kind == "quote":
                    fmt.setForeground(QColor(style.TEXT_MUTED))
                cursor.insertText(run.text, fmt)

    def _insert_code_block(self, cursor: QTextCursor, block: Block) -> None:
        self._reuse_block = False
        index = len(self._code_blocks)
        self._code_blocks.append(block.text)
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
        label.setFontPointSize(max(7.0, self._base.pointSizeF() - 1.5))
        inner.insertText(f"{block.language or 'code'}   ", label)
        copy = self._link_format(f"specchat:copy-code/{index}")
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
                    inner.insertText(line, self._token_format(run.source, code=True))
        # Continue after the code frame, still inside the message frame, in the empty block Qt keeps there.
        cursor.setPosition(frame.lastPosition() + 1)
        self._reuse_block = True

    def _new_block(self, cursor: QTextCursor, block_format: QTextBlockFormat, fmt=None) -> None:
        """Start a block, reusing the empty one that follows a code frame instead of leaving a blank line."""
        if self._reuse_block:
            self._reuse_block = False
            cursor.setBlockFormat(block_format)
            cursor.setBlockCharFormat(fmt or QTextCharFormat())
        else:
            cursor.insertBlock(block_format, fmt or QTextCharFormat())

    # ----- streaming

    def begin_stream(self, model_label: str) -> None:
        """Open the frame of a reply that is about to stream."""
        frame = self._append_frame("assistant")
        cursor = frame.firstCursorPosition()
        header = QTextCharFormat()
        header.setFontWeight(QFont.Weight.DemiBold)
        header.setForeground(QColor(style.TEXT_MUTED))
        header.setFontPointSize(max(7.0, self._base.pointSizeF() - 1))
        cursor.insertText(model_label or "Assistant", header)
        block_format = QTextBlockFormat()
        block_format.setTopMargin(4)
        cursor.insertBlock(block_format, QTextCharFormat())
        self._stream_frame = frame
        self._stream_in_code = False
        self._stream_pending_line = ""
        self.scroll_to_end()

    def is_streaming(self) -> bool:
        return self._stream_frame is not None

    def append_tokens(self, tokens: Sequence[tuple[str, str]]) -> None:
        """Append streamed (text, source) tokens at the end of the streaming reply."""
        if self._stream_frame is None or not tokens:
            return
        follow = self._at_bottom()
        cursor = self._stream_frame.lastCursorPosition()
        cursor.beginEditBlock()
        for text, source in tokens:
            if not text:
                continue
            # Code fences are tracked line by line so code is monospace while it streams, as it will be after.
            pieces = text.split("\n")
            for n, piece in enumerate(pieces):
                if n:
                    self._end_stream_line()
                    cursor.insertBlock(QTextBlockFormat(), QTextCharFormat())
                if piece:
                    self._stream_pending_line += piece
                    cursor.insertText(piece, self._token_format(source, code=self._stream_in_code))
        cursor.endEditBlock()
        if follow:
            self.scroll_to_end()

    def _end_stream_line(self) -> None:
        if self._stream_pending_line.lstrip().startswith(("```", "~~~")):
            self._stream_in_code = not self._stream_in_code
        self._stream_pending_line = ""

    def finish_stream(self, message: TranscriptMessage) -> None:
        """Replace the streamed text of the reply with its Markdown rendering and stats row."""
        frame = self._stream_frame
        self._stream_frame = None
        if frame is None:
            self.add_message(message, is_last_reply=True)
            return
        self._hide_regenerate_links()
        follow = self._at_bottom()
        cursor = frame.firstCursorPosition()
        cursor.setPosition(frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()
        cursor.removeSelectedText()
        self._render_message(cursor, message, is_last_reply=True)
        cursor.endEditBlock()
        if follow:
            self.scroll_to_end()

    def _hide_regenerate_links(self) -> None:
        """Only the newest reply can be regenerated or continued; earlier such links are removed."""
        document = self.document()
        for label, action in (("Regenerate", "regenerate"), ("Continue", "continue")):
            cursor = QTextCursor(document)
            while True:
                cursor = document.find(label, cursor)
                if cursor.isNull():
                    break
                if cursor.charFormat().anchorHref().startswith(f"specchat:{action}/"):
                    cursor.removeSelectedText()

    def streamed_text(self) -> str:
        """The text of the reply streaming now ("" when none)."""
        if self._stream_frame is None:
            return ""
        cursor = self._stream_frame.firstCursorPosition()
        cursor.setPosition(self._stream_frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        text = cursor.selection().toPlainText()
        return text.split("\n", 1)[1] if "\n" in text else ""

    # ----- scrolling and links

    def _at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 24

    def scroll_to_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def _on_anchor(self, url: QUrl) -> None:
        href = url.toString()
        if not href.startswith("specchat:"):
            return
        action, _, argument = href[len("specchat:"):].partition("/")
        if action == "copy-code":
            QApplication.clipboard().setText(self._code_blocks[int(argument)])
        elif action == "copy":
            self.sig_copy_message.emit(int(argument))
        elif action == "regenerate":
            self.sig_regenerate.emit(int(argument))
        elif action == "continue":
            self.sig_continue.emit(int(argument))
        elif action == "edit":
            self.sig_edit_message.emit(int(argument))
        elif action == "retry":
            self.sig_retry.emit()
