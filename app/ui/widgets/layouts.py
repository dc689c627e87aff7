"""Small layout helpers shared by the window and its dialogs. GUI thread only."""

from __future__ import annotations

from typing import Callable, Sequence, Union

from PySide6.QtCore import Qt, SignalInstance
from PySide6.QtWidgets import QHBoxLayout, QLayout, QPushButton, QSplitter, QVBoxLayout, QWidget


def column(*items, margins: tuple[int, int, int, int] = (0, 0, 0, 0)) -> QWidget:
    """A widget stacking `items` top to bottom without spacing; an item is a widget, a layout, or
    (widget, stretch)."""
    box = QWidget()
    layout = QVBoxLayout(box)
    layout.setContentsMargins(*margins)
    layout.setSpacing(0)
    for item in items:
        widget, stretch = item if isinstance(item, tuple) else (item, 0)
        if isinstance(widget, QLayout):
            layout.addLayout(widget, stretch)
        else:
            layout.addWidget(widget, stretch)
    return box


def sidebar_split(sidebar: QWidget, main: QWidget, sizes: tuple[int, int]) -> QSplitter:
    """A sidebar beside the main area: only the main area grows, neither collapses, a hairline between."""
    splitter = QSplitter(Qt.Orientation.Horizontal)
    for n, widget in enumerate((sidebar, main)):
        splitter.addWidget(widget)
        splitter.setStretchFactor(n, n)
    splitter.setSizes(list(sizes))
    splitter.setChildrenCollapsible(False)
    splitter.setHandleWidth(1)
    return splitter


def padded(widget: QWidget, left: int, top: int, right: int, bottom: int) -> QVBoxLayout:
    """`widget` in a layout with these margins."""
    layout = QVBoxLayout()
    layout.setContentsMargins(left, top, right, bottom)
    layout.addWidget(widget)
    return layout


Slot = Union[Callable[..., object], SignalInstance]  # what a button's click is connected to


def button_row(left: Sequence[tuple[str, Slot]], right: Sequence[tuple[str, Slot]] = ()) -> QHBoxLayout:
    """A row of push buttons (label, slot): `left` at the start, `right` at the end."""
    row = QHBoxLayout()
    for label, slot in left:
        row.addWidget(_button(label, slot))
    row.addStretch(1)
    for label, slot in right:
        row.addWidget(_button(label, slot))
    return row


def _button(label: str, slot: Slot) -> QPushButton:
    button = QPushButton(label)
    button.clicked.connect(slot)
    return button
