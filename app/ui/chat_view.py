"""The transcript: a QTextBrowser that streams tokens with their provenance and renders finished replies.

While a reply streams, tokens are appended at the end of the document (never a re-render of the whole document);
accepted draft tokens get a soft green background and every token a tooltip saying who produced it. When the reply
is finished, only that message is rendered again as Markdown, keeping each character's provenance, with code blocks
in monospace and a Copy link. GUI thread only.
"""

from __future__ import annotations

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
)
from PySide6.QtWidgets import QApplication, QTextBrowser

from app.ui import style
from app.ui.markdown_spans import char_sources, parse_reply
from app.ui.transcript_format import (
    CONTINUABLE,
    DRAFT_TOOLTIP,
    PROVENANCE_PROPERTY,
    TARGET_TOOLTIP,
    ReplyWriter,
    TranscriptMessage,
    format_stats,
)

__all__ = ["ChatView", "DRAFT_TOOLTIP", "TARGET_TOOLTIP", "TranscriptMessage", "format_stats"]


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
    sig_older_wanted = Signal()
    """The user scrolled to the top of a chat shown from its end: show the messages before it."""
    sig_inspect = Signal(int)
    """The user clicked the stats row of the reply with this id: open its inspector."""

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
        self._has_older = False
        self.verticalScrollBar().valueChanged.connect(self._on_scrolled)
        self._stream_frame: Optional[QTextFrame] = None
        self._stream_in_code = False
        self._stream_line_start = True
        self._stream_pending_line = ""
        self._base = self.font()
        self._writer = ReplyWriter(self._base)

    # ----- highlighting

    def highlighting(self) -> bool:
        return self._writer.highlight

    def set_highlighting(self, enabled: bool) -> None:
        """Show or hide the background of accepted draft tokens everywhere, including a reply still streaming."""
        if enabled == self._writer.highlight:
            return
        self._writer.highlight = enabled
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
            self._writer.set_background(fmt)
            cursor.setPosition(position)
            cursor.setPosition(position + length, QTextCursor.MoveMode.KeepAnchor)
            cursor.setCharFormat(fmt)

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
        self._writer.code_blocks.clear()
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

    def show_messages(self, messages: Sequence[TranscriptMessage], has_older: bool = False) -> None:
        """Render a conversation, or its newest part with `has_older` (opening a chat; never while a reply
        streams). Older messages are asked for with sig_older_wanted when the user scrolls to the top."""
        self.setUpdatesEnabled(False)
        self._has_older = False  # the scroll to the end below must not ask for more
        try:
            self.clear_transcript()
            last_assistant = max((m.message_id for m in messages if m.role == "assistant"), default=None)
            cursor = self._end_cursor()
            cursor.beginEditBlock()
            for message in messages:
                if message.role != "system":
                    self._insert_message(self._append_frame(message.role), message,
                                         message.message_id == last_assistant)
            cursor.endEditBlock()
            if not any(m.role != "system" for m in messages):
                self._show_welcome()
        finally:
            self.setUpdatesEnabled(True)
        self.scroll_to_end()
        self._has_older = has_older

    def prepend_messages(self, messages: Sequence[TranscriptMessage], has_older: bool) -> None:
        """Put older messages above those shown, keeping what the user looks at where it is on screen."""
        bar = self.verticalScrollBar()
        from_bottom = bar.maximum() - bar.value()
        frames = self.document().rootFrame().childFrames()
        position = frames[0].firstPosition() - 1 if frames else self._end_cursor().position()
        cursor = QTextCursor(self.document())
        cursor.beginEditBlock()
        for message in messages:
            if message.role == "system":
                continue
            cursor.setPosition(position)
            frame = cursor.insertFrame(self._frame_format(message.role))
            self._insert_message(frame, message, False)
            position = frame.lastPosition() + 1
        cursor.endEditBlock()
        bar.setValue(bar.maximum() - from_bottom)
        self._has_older = has_older

    def _on_scrolled(self, value: int) -> None:
        if self._has_older and value == self.verticalScrollBar().minimum():
            self._has_older = False  # until the page asked for arrives
            self.sig_older_wanted.emit()

    def add_message(self, message: TranscriptMessage, is_last_reply: bool = False) -> None:
        if message.role == "system":
            return
        if message.role == "user":
            self._hide_regenerate_links()  # the reply above is no longer the last one
        self._insert_message(self._append_frame(message.role), message, is_last_reply)

    def _insert_message(self, frame: QTextFrame, message: TranscriptMessage, is_last_reply: bool) -> None:
        self._render_message(frame.firstCursorPosition(), message, is_last_reply)

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
            cursor.insertText("Retry", self._writer.link_format("specchat:retry"))
        self.scroll_to_end()

    def _append_frame(self, role: str) -> QTextFrame:
        return self._end_cursor().insertFrame(self._frame_format(role))

    def _frame_format(self, role: str) -> QTextFrameFormat:
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

    def _end_cursor(self) -> QTextCursor:
        cursor = QTextCursor(self.document())
        cursor.movePosition(QTextCursor.MoveOperation.End)
        return cursor

    def _render_message(self, cursor: QTextCursor, message: TranscriptMessage, is_last_reply: bool) -> None:
        self._writer.reuse_block = False
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
        self._writer.insert_markdown(cursor, parse_reply(message.content, sources))
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
        self._writer.new_block(cursor, block_format, muted)
        if stats_text:
            # The stats row opens the reply's inspector: a link that keeps the row's quiet look.
            stats_link = self._writer.link_format(f"specchat:inspect/{message.message_id}")
            stats_link.setForeground(QColor(style.TEXT_MUTED))
            stats_link.setFontPointSize(muted.fontPointSize())
            stats_link.setToolTip("Show this reply's rounds as charts")
            cursor.insertText(stats_text, stats_link)
            cursor.insertText("     ", muted)
        for n, (label, action) in enumerate(actions):
            if n:
                cursor.insertText("   ", muted)
            link = self._writer.link_format(f"specchat:{action}/{message.message_id}")
            link.setFontPointSize(muted.fontPointSize())
            cursor.insertText(label, link)

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
                    cursor.insertText(piece, self._writer.token_format(source, code=self._stream_in_code))
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
            QApplication.clipboard().setText(self._writer.code_blocks[int(argument)])
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
        elif action == "inspect":
            self.sig_inspect.emit(int(argument))
