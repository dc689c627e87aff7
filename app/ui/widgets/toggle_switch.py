"""A small on/off switch (a checkable button painted as a pill), for settings that flip instantly."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent
from PySide6.QtWidgets import QAbstractButton

from app.ui.widgets import style


class ToggleSwitch(QAbstractButton):
    """A checkable switch; `toggled` and `clicked` behave as for a QCheckBox. GUI thread only."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setCheckable(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFocusPolicy(Qt.FocusPolicy.StrongFocus)

    def sizeHint(self) -> QSize:
        return QSize(36, 20)

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(1, 1, -1, -1)
        height = min(rect.height(), 20.0)
        track = QRectF(rect.left(), rect.center().y() - height / 2, min(rect.width(), 36.0), height)
        on = self.isChecked()
        color = QColor(style.ACCENT if on else style.current().switch_off)
        if not self.isEnabled():
            color.setAlpha(110)
        painter.setPen(Qt.PenStyle.NoPen)
        painter.setBrush(color)
        painter.drawRoundedRect(track, height / 2, height / 2)
        knob = height - 4
        x = track.right() - knob - 2 if on else track.left() + 2
        painter.setBrush(QColor(style.current().switch_knob))
        painter.drawEllipse(QRectF(x, track.top() + 2, knob, knob))
        if self.hasFocus():
            painter.setPen(QColor(style.ACCENT_SOFT))
            painter.setBrush(Qt.BrushStyle.NoBrush)
            painter.drawRoundedRect(track.adjusted(-1, -1, 1, 1), height / 2 + 1, height / 2 + 1)
