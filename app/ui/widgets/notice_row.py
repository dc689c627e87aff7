"""A notice row: one sentence that wraps, and the controls that answer it at its right, aligned to its first line.
The chat header's question (load the chat's model or keep the loaded one) and a template-less model's choice of
prompt format are both one of these. GUI thread only."""

from __future__ import annotations

from typing import TypeVar

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QWidget

W = TypeVar("W", bound=QWidget)


class NoticeRow(QFrame):
    """The sentence is `label` (plain text, never read as markup); `add` puts a control after it. Hidden until
    shown. `object_name` picks its look in the style sheet (ErrorBanner, or none for a plain row)."""

    def __init__(self, object_name: str, margins: tuple[int, int, int, int], parent: QWidget | None = None):
        super().__init__(parent)
        self.setObjectName(object_name)
        self._row = QHBoxLayout(self)
        self._row.setContentsMargins(*margins)
        self.label = QLabel("")
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.PlainText)
        self._row.addWidget(self.label, 1)
        self.hide()

    def add(self, control: W) -> W:
        """`control` at the row's end, beside the sentence's first line."""
        self._row.addWidget(control, 0, Qt.AlignmentFlag.AlignTop)
        return control
