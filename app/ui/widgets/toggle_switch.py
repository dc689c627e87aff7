"""A small on/off switch (a checkable button painted as a pill), for settings that flip instantly."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize, Qt
from PySide6.QtGui import QColor, QPainter, QPaintEvent, QPen
from PySide6.QtWidgets import QAbstractButton

from app.ui.widgets import style


class ToggleSwitch(QAbstractButton):
    """A checkable switch; `toggled` and `clicked` behave as for a QCheckBox. GUI thread only."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setCheckable(True)
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        # Tab reaches it, a click does not focus it: a space typed after the click must not flip it again.
        self.setFocusPolicy(Qt.FocusPolicy.TabFocus)

    def sizeHint(self) -> QSize:
        return QSize(42, 26)  # a 36x20 pill, and room around it for the focus ring

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QPainter(self)
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        rect = QRectF(self.rect()).adjusted(3, 3, -3, -3)
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
        if self.hasFocus():  # the same 2-pixel accent ring as every other control (style.focus_rules)
            painter.setPen(QPen(QColor(style.ACCENT), 1.6))  # a gap from the track, so it shows on an accent "on"
            painter.setBrush(Qt.BrushStyle.NoBrush)
            ring = track.adjusted(-2.2, -2.2, 2.2, 2.2)
            painter.drawRoundedRect(ring, ring.height() / 2, ring.height() / 2)
