"""Settings as pages: a list of page names beside the page shown, each page scrolling on its own. GUI thread only.

A page is laid out at its natural size inside a scroll area, so a small screen scrolls it instead of squeezing
its widgets onto each other (the one tall dialog did that to the Servers list below 1000 pixels of height).
"""

from __future__ import annotations

from PySide6.QtCore import QSize
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QLayout,
    QListWidget,
    QScrollArea,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

# The dialog's size when the screen has room; on a smaller screen it takes at most SCREEN_SHARE of it.
PREFERRED_SIZE = QSize(860, 600)
SCREEN_SHARE = 0.9
# A chat's (or a preset's) switch for tools (ChatSettings.tools), said the same in each dialog.
TOOLS_CHECK = "Offer the model the tools of Settings > Tools"


def hint(text: str) -> QLabel:
    """A muted, wrapping sentence under a setting."""
    label = QLabel(text)
    label.setObjectName("Muted")
    label.setWordWrap(True)
    return label


def fitted_size(available: QSize) -> QSize:
    """The dialog's size on a screen with `available` room (the screen less its panels)."""
    return QSize(
        min(PREFERRED_SIZE.width(), int(available.width() * SCREEN_SHARE)),
        min(PREFERRED_SIZE.height(), int(available.height() * SCREEN_SHARE)),
    )


class SettingsPages(QWidget):
    """Page names on the left, the chosen page on the right; each page is a column of widgets that scrolls."""

    def __init__(self, parent=None):
        super().__init__(parent)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        self.names = QListWidget()
        self.names.setObjectName("SettingsPageList")
        self.names.setFixedWidth(180)
        self.stack = QStackedWidget()
        self.names.currentRowChanged.connect(self.stack.setCurrentIndex)
        row.addWidget(self.names)
        row.addWidget(self.stack, 1)
        self.pages: dict[str, QScrollArea] = {}

    def add_page(self, name: str, *items: QWidget | QLayout) -> QVBoxLayout:
        """A page called `name` showing `items` top to bottom; returns its layout for more."""
        content = QWidget()
        layout = QVBoxLayout(content)
        layout.setContentsMargins(16, 8, 16, 12)
        title = QLabel(f"<b>{name}</b>")
        title.setObjectName("PageTitle")
        layout.addWidget(title)
        for item in items:
            if isinstance(item, QLayout):
                layout.addLayout(item)
            else:
                layout.addWidget(item)
        layout.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(content)
        self.stack.addWidget(scroll)
        self.names.addItem(name)
        self.pages[name] = scroll
        if self.names.currentRow() < 0:
            self.names.setCurrentRow(0)
        return layout

    def page_names(self) -> list[str]:
        return list(self.pages)

    def show_page(self, name: str) -> None:
        self.names.setCurrentRow(self.page_names().index(name))
