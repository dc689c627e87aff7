"""The reply streaming now, at the transcript's end: its frame, its Thinking section and its answer as Markdown.

Only the last, unfinished block of the answer is ever written again (markdown.streaming). A reply longer than the
transcript may show stops showing with a note; the rest is kept, and shown once the reply ends and is rendered
from its record (ChatView.finish_stream). GUI thread only.
"""

from __future__ import annotations

from typing import Optional, Sequence

from PySide6.QtGui import QFont, QTextDocument, QTextFrame

from app.store.provenance import RoundRecord, TokenRecord
from app.ui.transcript import long_text, message_actions
from app.ui.transcript.reply import thinking_section
from app.ui.transcript import marks as transcript_marks
from app.ui.transcript.frames import insert_author
from app.ui.transcript.markdown.streaming import StreamingAnswer
from app.ui.transcript.reply.writer import ReplyWriter


class StreamingReply:
    """One streaming reply's frame and what is written into it; `key` marks its characters' rounds."""

    def __init__(
        self, writer: ReplyWriter, base: QFont, document: QTextDocument, frame: QTextFrame, model_label: str, key: int
    ):
        self._writer = writer
        self._base = base
        self._document = document
        self._key = key
        self.frame = frame
        insert_author(frame.firstCursorPosition(), base, model_label)
        self._answer: Optional[StreamingAnswer] = None  # made by the answer's first token, after any thinking
        self._thinking: Optional[thinking_section.StreamingThinking] = None  # made by the first thinking token
        self.cut = False  # the answer reached what it may show: the rest is shown when it ends

    def append_answer(self, tokens: Sequence[TokenRecord], rounds: Sequence[RoundRecord]) -> None:
        if self._answer is None:
            self._answer = StreamingAnswer(self._writer, self._document, self.frame, self._key)
        if not self._answer.append(tokens, rounds):
            self.cut = True
            message_actions.insert_note(self._base, self.frame.lastCursorPosition(), long_text.STREAM_NOT_SHOWN)

    def append_thinking(self, tokens: Sequence[TokenRecord], rounds: Sequence[RoundRecord]) -> None:
        if self._thinking is None:
            self._thinking = thinking_section.StreamingThinking(
                self._writer, self._base, self._document, self.frame, self._key
            )
        self._thinking.append(tokens, rounds)

    def answer_started(self, keep_open: bool, thinking_seconds: float, thinking_tokens: int) -> None:
        """The Thinking section (if any) folds to its header, or stays open and says how long it took."""
        section = self._thinking
        if section is None:
            return
        if keep_open:
            section.retitle(f"▾ {thinking_section.header_words(thinking_seconds, thinking_tokens)}")
        else:
            section.fold(thinking_seconds, thinking_tokens)

    def text(self) -> str:
        """What the reader sees of the reply so far, without its author line."""
        text = transcript_marks.visible_text(self._document, self.frame.firstPosition(), self.frame.lastPosition())
        return text.split("\n", 1)[1] if "\n" in text else ""
