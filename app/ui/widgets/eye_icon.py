"""The eye shown beside a model that can see pictures (a projector lies beside it), in the library and the picker.
Drawn with QPainter, in the theme's muted colour, so it needs no icon theme or image file. GUI thread only."""

from __future__ import annotations

import functools

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QIcon, QPainter, QPainterPath, QPen, QPixmap

from app.ui.widgets import style

SIZE = 16


def eye_icon() -> QIcon:
    """An eye: an almond outline around a round pupil (drawn once per theme colour)."""
    return _eye(style.TEXT_MUTED)


@functools.lru_cache(maxsize=4)
def _eye(colour_name: str) -> QIcon:
    pixmap = QPixmap(SIZE * 2, SIZE * 2)  # drawn at twice the size, so it stays sharp on a scaled screen
    pixmap.fill(Qt.GlobalColor.transparent)
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    colour = QColor(colour_name)
    painter.setPen(QPen(colour, 2.5))
    outline = QPainterPath()
    outline.moveTo(3, 16)
    outline.quadTo(16, 3, 29, 16)
    outline.quadTo(16, 29, 3, 16)
    painter.drawPath(outline)
    painter.setBrush(colour)
    painter.drawEllipse(QRectF(QPointF(16, 16) - QPointF(5, 5), QPointF(16, 16) + QPointF(5, 5)))
    painter.end()
    return QIcon(pixmap)
