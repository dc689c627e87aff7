"""A rich-text label whose links follow the theme: its text is laid out again when the palette changes."""

from __future__ import annotations

from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QLabel


class LinkLabel(QLabel):
    """GUI thread only."""

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        # A rich-text label takes its links' colour when its text is set: after a live switch to the dark theme the
        # light theme's dark blue link stayed, unreadable on the dark window.
        if event.type() == QEvent.Type.PaletteChange and self.text():
            text = self.text()
            self.clear()  # setText skips a text it already holds
            self.setText(text)
