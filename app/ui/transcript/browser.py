"""The transcript's QTextBrowser behaviours: it fetches nothing, copies what the reader sees (ghost text left
out), and answers a token's tooltip when it is hovered, from the char-format properties of the character and the
round records of its message, so that nothing is built per token while a reply streams.

GUI thread only.
"""

from __future__ import annotations

from typing import Sequence, cast

from PySide6.QtCore import QEvent, QMimeData, QPoint, QPointF, QUrl, Qt
from PySide6.QtGui import QHelpEvent, QTextCursor
from PySide6.QtWidgets import QTextBrowser, QToolTip

from app.store.provenance import RoundRecord
from app.ui.transcript import marks as transcript_marks
from app.ui.transcript.links.action_links import ActionLinks
from app.ui.transcript.links.link_guard import allowed_resource
from app.ui.transcript.reply.chars import NO_ROUND
from app.ui.transcript.token_tooltip import refused_tooltip, token_tooltip
from app.ui.transcript.format import GHOST_PROPERTY, MESSAGE_PROPERTY, PROVENANCE_PROPERTY, ROUND_PROPERTY


class TranscriptBrowser(QTextBrowser):
    """The base of the chat view. GUI thread only."""

    def __init__(self, parent=None):
        super().__init__(parent)
        # Each shown reply's round records, by message key (its id, or STREAM_KEY), for tooltips and ghost text.
        self.rounds_by_key: dict[int, Sequence[RoundRecord]] = {}
        # The key of this transcript's own links: a reply's text cannot write a link the app acts on.
        self.action_links = ActionLinks()

    def loadResource(self, kind: int, name: QUrl | str):  # noqa: N802 (Qt override)
        """Nothing outside the app is ever fetched (a reply's remote image would tell a server it was read)."""
        if allowed_resource(QUrl(name) if isinstance(name, str) else name):
            return super().loadResource(kind, name)
        return None

    def createMimeDataFromSelection(self) -> QMimeData:  # noqa: N802 (Qt override)
        """Copied text is what the reader sees, less the ghost text of refused proposals."""
        cursor = self.textCursor()
        # Qt's own object, changed: a QMimeData made in Python is deleted by the clipboard when the process exits,
        # after Python has shut down, and that crashed the exit. Reading one format makes Qt fill them all in now,
        # so the text set below is the one that stays; the rich-text formats would carry the ghost text.
        data = super().createMimeDataFromSelection()
        data.data("text/plain")
        for kind in data.formats():
            data.removeFormat(kind)
        data.setText(transcript_marks.visible_text(self.document(), cursor.selectionStart(), cursor.selectionEnd()))
        return data

    def token_tooltip(self, position: int) -> str:
        """What hovering the character at this document position shows ("" for none): who wrote its token and,
        when its round is known, what was proposed, refused and written instead."""
        cursor = QTextCursor(self.document())
        cursor.setPosition(position)
        cursor.movePosition(QTextCursor.MoveOperation.NextCharacter, QTextCursor.MoveMode.KeepAnchor)
        fmt = cursor.charFormat()
        round_index = fmt.intProperty(ROUND_PROPERTY) if fmt.hasProperty(ROUND_PROPERTY) else NO_ROUND
        rounds = self.rounds_by_key.get(fmt.intProperty(MESSAGE_PROPERTY))
        if fmt.boolProperty(GHOST_PROPERTY):
            return refused_tooltip(round_index, rounds)
        href = fmt.anchorHref() if fmt.isAnchor() and not self.action_links.owns(fmt.anchorHref()) else ""
        origin = fmt.stringProperty(PROVENANCE_PROPERTY)
        if not origin:  # the app's own text: its tooltip when it has one (a message's time, a switcher arrow)
            return f"Link to {href}" if href else fmt.toolTip()
        return token_tooltip(origin, round_index, rounds, href)

    def _character_at(self, point: QPoint) -> int:
        """The document position of the character under a viewport point, or -1."""
        offset = QPointF(self.horizontalScrollBar().value(), self.verticalScrollBar().value())
        layout = self.document().documentLayout()
        position = layout.hitTest(QPointF(point) + offset, Qt.HitTestAccuracy.ExactHit)
        if position < 0:
            return -1
        # The hit position is the nearest gap between characters; left of it is the character before.
        cursor = QTextCursor(self.document())
        cursor.setPosition(position)
        if position > 0 and point.x() < self.cursorRect(cursor).left():
            return position - 1
        return position

    def viewportEvent(self, event: QEvent) -> bool:  # noqa: N802 (Qt override)
        if event.type() == QEvent.Type.ToolTip:
            help_event = cast(QHelpEvent, event)  # a ToolTip event is a QHelpEvent
            position = self._character_at(help_event.pos())
            text = self.token_tooltip(position) if position >= 0 else ""
            if text:
                QToolTip.showText(help_event.globalPos(), text, self.viewport())
            else:
                QToolTip.hideText()
                event.ignore()
            return True
        return super().viewportEvent(event)
