"""A reply's tool calls in the transcript: the permission prompt before a call runs, and the call's block after.

Each call is drawn from its record (app.store.tool_calls), under the reply that made it, so what is shown is what
is stored, and a chat opened after a restart shows the same. A call not answered yet, while the window is asking,
is a prompt: the tool, its server and the arguments, with Allow once, Always allow this tool in this chat, and
Deny. A call that ran (or was refused or stopped) is a block folded to one line (tool, server, what happened, time);
a click opens it on the arguments and the result, a long result cut with a note. GUI thread only.
"""

from __future__ import annotations

import json
from typing import Optional

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QColor, QFont, QTextBlockFormat, QTextCharFormat, QTextCursor, QTextFrameFormat

from app.common.text import printable
from app.store.tool_calls import ToolCallRecord
from app.ui.transcript.format import TranscriptMessage
from app.ui.transcript.links.action_links import Action, ActionLinks
from app.ui.transcript.reply.writer import ReplyWriter
from app.ui.widgets import style

TOGGLE_ACTION = "toolcall"
ANSWER_ACTION = "toolanswer"
ANSWERS = (("Allow once", "once"), ("Always allow this tool in this chat", "always"), ("Deny", "denied"))
# How much of a result the transcript shows; the model got all of it (up to the tool host's own cap).
SHOWN_RESULT_CHARS = 4000


def pretty_arguments(arguments: str) -> str:
    """The arguments as indented JSON (as written, when they are not JSON)."""
    try:
        return json.dumps(json.loads(arguments), indent=2, ensure_ascii=False)
    except ValueError:
        return arguments


def outcome_words(call: ToolCallRecord, running: bool = False) -> str:
    """What happened to the call, in a few words: "returned in 0.2 s", "denied"..."""
    if running:
        return "running…"
    if call.answer == "denied":
        return "denied: the model was told"
    if call.answer == "stopped":
        return "stopped"
    if call.answer == "repeated":
        return "asked again: not run, the model answers from the earlier result"
    if not call.answer:
        return "not run: the chat was left before it was answered"
    return f"{'failed' if call.is_error else 'returned'} in {call.seconds:.1f} s"


def shown_result(call: ToolCallRecord) -> tuple[str, str]:
    """The result as the block shows it, and a note when it is cut ("" when it is whole)."""
    text = call.result
    if len(text) <= SHOWN_RESULT_CHARS:
        return text, ("The tool's result was longer; the model got its first part." if call.truncated else "")
    return text[:SHOWN_RESULT_CHARS], (
        f"Showing the first {SHOWN_RESULT_CHARS:,} of {len(text):,} characters; the model got all of them."
        if not call.truncated
        else f"Showing the first {SHOWN_RESULT_CHARS:,} of {len(text):,} characters; the "
        "tool's result was longer still, and the model got its first part."
    )


class CallBlocks(QObject):
    """Draws the calls of the replies the transcript shows, and turns clicks on their links into signals."""

    sig_answer = Signal(int, int, str)
    """(message_id, call index, answer): the person answered a prompt ("once", "always" or "denied")."""
    sig_refresh = Signal(object)
    """(TranscriptMessage): a block was opened or folded: render the reply again."""

    def __init__(self, writer: ReplyWriter, base: QFont, links: ActionLinks, parent: Optional[QObject] = None):
        super().__init__(parent)
        self._writer = writer
        self._base = base
        self._links = links
        self._open: set[tuple[int, int]] = set()
        self._shown: dict[int, TranscriptMessage] = {}
        # Set by the tool loop: the calls being asked about now, and the one running, by (message id, index).
        self.asking: set[tuple[int, int]] = set()
        self.running: Optional[tuple[int, int]] = None

    def insert(self, cursor: QTextCursor, message: TranscriptMessage) -> None:
        """The reply's calls, after its text."""
        calls = message.tool_calls
        if not calls:
            self._shown.pop(message.message_id, None)
            return
        self._shown[message.message_id] = message
        for index, call in enumerate(calls):
            key = (message.message_id, index)
            if key in self.asking and not call.answer:
                self._insert_prompt(cursor, key, call)
            else:
                self._insert_block(cursor, key, call)
        self._writer.reuse_block = False

    def handle(self, action: Action) -> bool:
        """Acts on a click on one of these links; False for any other link."""
        if action.name not in (TOGGLE_ACTION, ANSWER_ACTION):
            return False
        parts = action.argument.split(".")
        try:
            message_id, index = int(parts[0]), int(parts[1])
        except (ValueError, IndexError):
            return True
        if action.name == ANSWER_ACTION and len(parts) == 3 and parts[2] in {a for _, a in ANSWERS}:
            if (message_id, index) in self.asking:
                self.sig_answer.emit(message_id, index, parts[2])
        elif action.name == TOGGLE_ACTION and message_id in self._shown:
            self._open ^= {(message_id, index)}
            self.sig_refresh.emit(self._shown[message_id])
        return True

    # ----- drawing

    def _frame(self, cursor: QTextCursor, asking: bool) -> QTextCursor:
        frame_format = QTextFrameFormat()
        frame_format.setTopMargin(4)
        frame_format.setBottomMargin(4)
        frame_format.setPadding(8 if asking else 4)
        frame_format.setBorder(1)
        theme = style.current()
        frame_format.setBorderBrush(QColor(theme.warning_border if asking else theme.text_muted))
        frame_format.setBorderStyle(QTextFrameFormat.BorderStyle.BorderStyle_Solid)
        if asking:
            frame_format.setBackground(QColor(style.WARNING_SOFT))
        self._writer.new_block(cursor, QTextBlockFormat())
        frame = cursor.insertFrame(frame_format)
        inner = frame.firstCursorPosition()
        cursor.setPosition(frame.lastPosition() + 1)
        return inner

    def _code(self, cursor: QTextCursor, text: str) -> None:
        fmt = QTextCharFormat()
        fmt.setFont(style.monospace_font())
        fmt.setBackground(QColor(style.CODE_BACKGROUND))
        for line in text.split("\n"):
            cursor.insertBlock(QTextBlockFormat(), fmt)
            cursor.insertText(line or " ", fmt)

    def _label(self, cursor: QTextCursor, text: str, first: bool = False) -> None:
        fmt = style.muted_format(self._base, smaller=1.0)
        fmt.setFontWeight(QFont.Weight.Bold)
        if not first:
            cursor.insertBlock(QTextBlockFormat(), fmt)
        cursor.insertText(text, fmt)

    def _insert_prompt(self, cursor: QTextCursor, key: tuple[int, int], call: ToolCallRecord) -> None:
        inner = self._frame(cursor, asking=True)
        strong = QTextCharFormat()
        strong.setFontWeight(QFont.Weight.Bold)
        plain = QTextCharFormat()
        # Names as exactly what they are (a bidi override or a zero-width character shown escaped, never obeyed).
        server = f' from the server "{printable(call.server, name=True)}"' if call.server else ""
        inner.insertText("The model wants to run the tool ", plain)
        inner.insertText(printable(call.tool or call.name, name=True), strong)
        inner.insertText(f"{server}, with these arguments:", plain)
        self._code(inner, pretty_arguments(call.arguments))
        inner.insertBlock(QTextBlockFormat(), plain)
        for n, (label, answer) in enumerate(ANSWERS):
            if n:
                inner.insertText("   ·   ", plain)
            inner.insertText(label, self._writer.action_format(ANSWER_ACTION, f"{key[0]}.{key[1]}.{answer}"))

    def _insert_block(self, cursor: QTextCursor, key: tuple[int, int], call: ToolCallRecord) -> None:
        running = key == self.running and not call.result
        is_open = key in self._open
        inner = self._frame(cursor, asking=False)
        server = f" ({printable(call.server, name=True)})" if call.server else ""
        tool = printable(call.tool or call.name, name=True)
        words = f"{'▾' if is_open else '▸'} Tool {tool}{server} · {outcome_words(call, running)}"
        fmt = self._writer.action_format(TOGGLE_ACTION, f"{key[0]}.{key[1]}")
        if call.is_error or call.answer in ("denied", "stopped"):
            fmt.setForeground(QColor(style.current().warning_text))
        fmt.setToolTip("Show or hide the call's arguments and result")
        inner.insertText(words, fmt)
        if not is_open:
            return
        self._label(inner, "Arguments")
        self._code(inner, pretty_arguments(call.arguments))
        if call.result:
            self._label(inner, "Result sent to the model" if not call.is_error else "Error sent to the model")
            text, note = shown_result(call)
            self._code(inner, text)
            if note:
                muted = style.muted_format(self._base)
                inner.insertBlock(QTextBlockFormat(), muted)
                inner.insertText(note, muted)
