"""A one-line label that elides its text to the space it gets, at a word's end (the full text is its tooltip)."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QPaintEvent
from PySide6.QtWidgets import QLabel, QSizePolicy


class ElidedLabel(QLabel):
    """GUI thread only."""

    def __init__(self, text: str = "", parent=None):
        super().__init__(text, parent)
        self.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)

    def setText(self, text: str) -> None:
        super().setText(text)
        self.setToolTip(text)

    def minimumSizeHint(self) -> QSize:
        return QSize(0, super().minimumSizeHint().height())

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setPen(self.palette().color(self.foregroundRole()))
        rect = self.contentsRect()
        text = self.shown_text(rect.width())
        painter.drawText(rect, int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter), text)

    def shown_text(self, width: int) -> str:
        """The text as it fits `width`: whole, or cut after its last whole word that fits, with "…"; a word is
        never cut in two (a single word longer than the width is the exception)."""
        whole = self.text()
        metrics = self.fontMetrics()
        if metrics.horizontalAdvance(whole) <= width:
            return whole
        cut = metrics.elidedText(whole, Qt.TextElideMode.ElideRight, width)
        kept = cut[:-1] if cut.endswith("…") else cut
        if kept and len(kept) < len(whole) and not whole[len(kept)].isspace():
            space = kept.rfind(" ")
            if space > 0:
                kept = kept[:space]
        return kept.rstrip(" ,.;:·") + "…" if kept else cut
