"""The transcript: a QTextBrowser that streams tokens with their provenance and renders finished replies.

While a reply streams, it is shown as Markdown at the end of the document (reply.streaming_reply), where only its last,
unfinished block is ever written again (markdown.streaming); kept draft tokens get a background by who drafted them
(the draft model or n-gram lookup). When the reply is finished, that message alone is rendered again from its record, laid out as it
streamed, so nothing moves; each character keeps its provenance and round.
Hovering a token tells its round: what was proposed, what the target refused and what it wrote instead; refused
proposals can also be shown inline as struck-through ghost text, which copying leaves out. Links open only after
the user confirms them, and no image or other resource is ever fetched. GUI thread only.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from PySide6.QtCore import QUrl, Qt, Signal
from PySide6.QtGui import QTextBlockFormat, QTextCharFormat, QTextCursor, QTextFrame
from PySide6.QtWidgets import QApplication

from app.replies.comparison import ShownComparison, comparison_text
from app.store.provenance import RoundRecord, TokenRecord
from app.ui.transcript import long_text, message_actions, message_meta, picture_thumbnails, source_links
from app.ui.transcript.reply import thinking_section
from app.ui.transcript import marks as transcript_marks
from app.ui.transcript.links.link_guard import open_link_after_confirming
from app.ui.transcript.reply.chars import reply_chars
from app.ui.transcript.reply.writer import ReplyWriter
from app.ui.transcript.reply.streaming_reply import StreamingReply
from app.ui.transcript.token_tooltip import DRAFT_TOOLTIP, NGRAM_TOOLTIP, TARGET_TOOLTIP
from app.ui.transcript.browser import TranscriptBrowser
from app.ui.transcript.welcome import insert_welcome
from app.ui.transcript.frames import end_cursor, insert_author, insert_notice, message_frame_format
from app.ui.tools.call_blocks import CallBlocks
from app.ui.transcript.format import CONTINUABLE, STREAM_KEY, TranscriptMessage, format_stats

__all__ = ["ChatView", "DRAFT_TOOLTIP", "NGRAM_TOOLTIP", "TARGET_TOOLTIP", "TranscriptMessage", "format_stats"]


class ChatView(TranscriptBrowser):
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
    sig_compare = Signal(int)
    """The user asked to compare the reply with this id with plain decoding (or to cancel that comparison)."""
    sig_show_refused_toggled = Signal(bool)
    """The user showed or hid the refused proposals from the context menu (the view has already done it)."""
    sig_inspect = Signal(int)
    """The user clicked the stats row of the reply with this id: open its inspector."""
    sig_switch_version = Signal(int, int)
    """(message_id, step): show the version before (-1) or after (+1) the shown version with this id."""
    sig_source = Signal(int, int)
    """(message_id, number): the user clicked a reply's source [number]: show the passage in its document."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("Transcript")
        self.model_chosen: Callable[[], bool] = lambda: True  # the window's answer: the welcome asks for a model
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
        self._stream: Optional[StreamingReply] = None
        self._base = self.font()
        self._writer = ReplyWriter(self._base, self.action_links)
        # Compare with plain states that are not stored (running, failed), by message id; shown over stored ones.
        # message id -> a state (running, failed) shown over the stored comparison
        self._pending_comparisons: dict[int, ShownComparison] = {}
        # The links under a message, by their action: each tells this signal the message's id.
        self._message_signals = {
            "copy": self.sig_copy_message,
            "regenerate": self.sig_regenerate,
            "continue": self.sig_continue,
            "compare": self.sig_compare,
            "edit": self.sig_edit_message,
            "inspect": self.sig_inspect,
        }
        # Thinking sections: folded unless the setting keeps them open; a click turns one the other way.
        self._keep_thinking_open = False
        self._thinking_toggled: set[int] = set()
        self._thinking_replies: dict[int, TranscriptMessage] = {}  # shown replies that thought, by id
        # A reply's tool calls: the permission prompt, then the call's block (app.ui.tools).
        self.tool_calls = CallBlocks(self._writer, self._base, self.action_links, self)
        self.tool_calls.sig_refresh.connect(self.refresh_message)

    # ----- highlighting

    def highlighting(self) -> bool:
        return self._writer.highlight

    def set_highlighting(self, enabled: bool) -> None:
        """Show or hide the background of kept draft tokens everywhere, including a reply still streaming."""
        if enabled == self._writer.highlight:
            return
        self._writer.highlight = enabled
        transcript_marks.recolour_highlights(self.document(), self._writer.set_background)

    def highlighted_text(self, origin: Optional[str] = None) -> str:
        """All text that shows a draft highlight (of one origin, "draft", "ngram" or "history", if given), in
        document order (tests and accessibility)."""
        origins = (origin,) if origin else transcript_marks.HIGHLIGHTED
        return transcript_marks.highlighted_text(self.document(), origins)

    def show_refused(self) -> bool:
        return self._writer.show_refused

    def set_show_refused(self, enabled: bool) -> None:
        """Show or hide the refused proposals inline, as faint struck-through text where the target disagreed."""
        if enabled == self._writer.show_refused:
            return
        self._writer.show_refused = enabled
        if enabled:
            transcript_marks.insert_ghosts(self.document(), self._writer.insert_ghosts, self.rounds_by_key)
        else:
            transcript_marks.remove_ghosts(self.document())

    # ----- building the transcript

    def set_keep_thinking_open(self, keep: bool) -> None:
        """Whether a reply's Thinking section stays open when its answer starts (AppSettings.keep_thinking_open)."""
        self._keep_thinking_open = keep

    def clear_transcript(self) -> None:
        self._stream = None
        self._thinking_replies.clear()
        self._writer.code_blocks.clear()
        self.rounds_by_key.clear()
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
        insert_welcome(self._end_cursor(), self._base, self.viewport().height(), self.model_chosen())

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
                    self._insert_message(
                        self._append_frame(message.role), message, message.message_id == last_assistant
                    )
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
            frame = cursor.insertFrame(message_frame_format(message.role))
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
        # One edit block, so the document is laid out once for the message, not once per run of characters.
        cursor = frame.firstCursorPosition()
        cursor.beginEditBlock()
        self._render_message(cursor, message, is_last_reply)
        cursor.endEditBlock()

    def add_notice(self, text: str, kind: str = "info", retry: bool = False) -> None:
        """A line between messages: the context was trimmed, a generation failed (with a Retry link)..."""
        insert_notice(self.document(), text, kind, self._writer.action_format("retry") if retry else None)
        self.scroll_to_end()

    def _append_frame(self, role: str) -> QTextFrame:
        return self._end_cursor().insertFrame(message_frame_format(role))

    def _end_cursor(self) -> QTextCursor:
        return end_cursor(self.document())

    def _render_message(self, cursor: QTextCursor, message: TranscriptMessage, is_last_reply: bool) -> None:
        self._writer.reuse_block = False
        insert_author(cursor, self._base, "You" if message.role == "user" else message.model_label)
        message_meta.insert_meta(self._writer, self._base, cursor, message)
        plain_note = long_text.plain_text_note(message.content) if message.role == "assistant" else ""
        if message.role == "user" or plain_note:
            long_text.insert_plain(cursor, message.content)
            note = plain_note or long_text.not_shown_note(message.content, "message")
            if note:
                message_actions.insert_note(self._base, cursor, note)
        if message.role == "user":
            picture_thumbnails.insert_pictures(cursor, message.pictures)
            message_actions.insert_attachment_chips(self._base, cursor, message.attachments)
            message_actions.insert_actions(
                self._writer, self._base, cursor, message.message_id, [("Copy", "copy"), ("Edit", "edit")]
            )
            return
        rounds = message.rounds or []
        self.rounds_by_key[message.message_id] = rounds
        can_continue = is_last_reply and message.stats is not None and message.stats.stop_reason in CONTINUABLE
        if thinking_section.has_thinking(message):
            self._thinking_replies[message.message_id] = message
            is_open = self._keep_thinking_open != (message.message_id in self._thinking_toggled)
            thinking_section.insert_section(self._writer, self._base, cursor, message, rounds, is_open, can_continue)
        if not plain_note:
            chars = reply_chars(message.content, message.tokens, rounds)
            reply_start = cursor.position()
            self._writer.insert_reply(cursor, message.message_id, message.content, chars, rounds)
            if message.sources:
                source_links.link_citations(self._writer, cursor, reply_start, message.message_id, message.sources)
        if message.stats is not None and message.stats.thinking_unclosed:
            message_actions.insert_note(self._base, cursor, thinking_section.ANSWERED_IN_THINKING)
        self.tool_calls.insert(cursor, message)
        comparison = self._pending_comparisons.get(message.message_id, message.comparison)
        actions = message_actions.reply_actions(message, is_last_reply, can_continue, comparison)
        stats_text = format_stats(message.stats, rounds) if message.stats else ""
        message_actions.insert_actions(self._writer, self._base, cursor, message.message_id, actions, stats_text)
        if message.sources:
            source_links.insert_sources_line(self._writer, self._base, cursor, message.message_id, message.sources)
        if comparison_text(comparison):
            message_actions.insert_note(self._base, cursor, comparison_text(comparison))

    # ----- streaming

    def begin_stream(self, model_label: str) -> None:
        """Open the frame of a reply that is about to stream."""
        frame = self._append_frame("assistant")
        self._stream = StreamingReply(self._writer, self._base, self.document(), frame, model_label, STREAM_KEY)
        self.rounds_by_key[STREAM_KEY] = []
        self.scroll_to_end()

    def is_streaming(self) -> bool:
        return self._stream is not None

    def append_tokens(self, tokens: Sequence[TokenRecord], rounds: Optional[Sequence[RoundRecord]] = None) -> None:
        """Append streamed answer tokens to the streaming reply, shown as Markdown as they come (markdown.streaming).
        Each token's round indexes `rounds`, the reply's round records so far (the view keeps the latest list
        given, so passing the same growing list each time is enough). A round's record must be given by the time
        its target token is appended for its refused proposal to show inline."""
        if self._stream is None:
            return
        if rounds is not None:
            self.rounds_by_key[STREAM_KEY] = rounds
        if not tokens or self._stream.cut:
            return
        follow = self._at_bottom()
        self._stream.append_answer(tokens, self.rounds_by_key.get(STREAM_KEY, []))
        if follow:
            self.scroll_to_end()

    def append_reasoning(self, tokens: Sequence[TokenRecord], rounds: Optional[Sequence[RoundRecord]] = None) -> None:
        """Append streamed thinking tokens to the streaming reply's Thinking section (opened by the first)."""
        if self._stream is None or not tokens:
            return
        if rounds is not None:
            self.rounds_by_key[STREAM_KEY] = rounds
        follow = self._at_bottom()
        self._stream.append_thinking(tokens, self.rounds_by_key.get(STREAM_KEY, []))
        if follow:
            self.scroll_to_end()

    def answer_started(self, thinking_seconds: float, thinking_tokens: int) -> None:
        """The streaming reply's answer begins: its Thinking section folds to its header, unless kept open."""
        if self._stream is not None:
            self._stream.answer_started(self._keep_thinking_open, thinking_seconds, thinking_tokens)

    def finish_stream(self, message: TranscriptMessage) -> None:
        """Render the finished reply from its record in place of the streamed one (laid out the same, so nothing
        moves), with its links and stats row."""
        if self._stream is None:
            self.add_message(message, is_last_reply=True)
            return
        frame = self._stream.frame
        self._stream = None
        self._hide_regenerate_links()
        self.rounds_by_key.pop(STREAM_KEY, None)
        follow = self._at_bottom()
        cursor = frame.firstCursorPosition()
        cursor.setPosition(frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()
        self._clear_frame(cursor)
        self._render_message(cursor, message, is_last_reply=True)
        cursor.endEditBlock()
        if follow:
            self.scroll_to_end()

    @staticmethod
    def _clear_frame(cursor: QTextCursor) -> None:
        """Remove a message frame's content (selected), leaving its first block as a new frame's: the block left
        would otherwise keep the format of the last one removed (a paragraph's gap above the header)."""
        cursor.removeSelectedText()
        cursor.setBlockFormat(QTextBlockFormat())
        cursor.setBlockCharFormat(QTextCharFormat())

    def set_pending_comparison(self, message_id: int, state: Optional[ShownComparison]) -> None:
        """Show `state` (running, failed) over a reply's stored comparison from its next refresh on; None: the
        stored one again."""
        if state is None:
            self._pending_comparisons.pop(message_id, None)
        else:
            self._pending_comparisons[message_id] = state

    def refresh_message(self, message: TranscriptMessage) -> None:
        """Render a shown reply again (its comparison changed); nothing when the reply is not shown."""
        found = message_actions.find_link(self.document(), "Copy", self.action_href("copy", message.message_id))
        if found is None:
            return
        frame = found.currentFrame()
        last = (
            message_actions.find_link(self.document(), "Regenerate", self.action_href("regenerate", message.message_id))
            is not None
        )
        follow = self._at_bottom()
        cursor = frame.firstCursorPosition()
        cursor.setPosition(frame.lastPosition(), QTextCursor.MoveMode.KeepAnchor)
        cursor.beginEditBlock()
        self._clear_frame(cursor)
        self._render_message(cursor, message, last)
        cursor.endEditBlock()
        if follow:
            self.scroll_to_end()

    def _hide_regenerate_links(self) -> None:
        """Only the newest reply can be regenerated or continued; earlier such links are removed, and so is the
        Thinking section's word that Continue goes on."""
        message_actions.remove_links(
            self.document(), self.action_links, (("Regenerate", "regenerate"), ("Continue", "continue"))
        )
        found = self.document().find(thinking_section.CONTINUE_GOES_ON)
        while not found.isNull():
            found.removeSelectedText()
            found = self.document().find(thinking_section.CONTINUE_GOES_ON, found)

    def streamed_text(self) -> str:
        """The text of the reply streaming now ("" when none)."""
        return self._stream.text() if self._stream is not None else ""

    def contextMenuEvent(self, event) -> None:  # noqa: N802 (Qt override)
        menu = self.createStandardContextMenu(event.pos())
        menu.addSeparator()
        refused = menu.addAction("Show refused draft proposals")
        refused.setCheckable(True)
        refused.setChecked(self.show_refused())
        refused.toggled.connect(self._on_refused_toggled)
        menu.exec(event.globalPos())
        menu.deleteLater()

    def _on_refused_toggled(self, on: bool) -> None:
        self.set_show_refused(on)
        self.sig_show_refused_toggled.emit(on)

    # ----- scrolling and links

    def _at_bottom(self) -> bool:
        bar = self.verticalScrollBar()
        return bar.value() >= bar.maximum() - 24

    def scroll_to_end(self) -> None:
        bar = self.verticalScrollBar()
        bar.setValue(bar.maximum())

    def action_href(self, action: str, argument: object = "") -> str:
        """The href of the app's own link for this action (tests and find_link)."""
        return self.action_links.href(action, argument)

    def _on_anchor(self, url: QUrl) -> None:
        action = self.action_links.parse(url.toString())
        if action is None:
            # A reply's own link, `specchat:` ones included: never an app action; opened only after confirming.
            open_link_after_confirming(self, url)
            return
        number = action.number()
        # A target that is not there (an index past the code blocks, a bad id) is ignored, never raised.
        if action.name == "copy-code":
            if number is not None and 0 <= number < len(self._writer.code_blocks):
                QApplication.clipboard().setText(self._writer.code_blocks[number])
        elif action.name == "retry":
            self.sig_retry.emit()
        elif action.name == source_links.SOURCE_ACTION:
            cited = source_links.parse_argument(action.argument)
            if cited is not None:
                self.sig_source.emit(*cited)
        elif self.tool_calls.handle(action):
            pass
        elif action.name == thinking_section.TOGGLE_ACTION and number in self._thinking_replies:
            self._thinking_toggled ^= {number}
            self.refresh_message(self._thinking_replies[number])
        elif action.name in (message_meta.PREVIOUS_VERSION, message_meta.NEXT_VERSION) and number is not None:
            self.sig_switch_version.emit(number, -1 if action.name == message_meta.PREVIOUS_VERSION else 1)
        elif action.name in self._message_signals and number is not None:
            self._message_signals[action.name].emit(number)
