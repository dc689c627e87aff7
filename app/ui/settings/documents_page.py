"""Settings > Documents: the embedding model a project's documents are read with (app.ui.projects.embedding), one
choice among the library's embedding models, "None (words only)" the default."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QFormLayout, QVBoxLayout, QWidget

from app.ui.settings.pages import hint

NONE_LABEL = "None (words only)"


class DocumentsPage(QWidget):
    """A combo box of `models` (the library's embedding models, by path) after None; the saved choice is listed
    even when the library no longer finds it, so opening Settings never changes it."""

    def __init__(self, chosen: str, models: Sequence[str], parent=None):
        super().__init__(parent)
        self.model = QComboBox()
        self.model.addItem(NONE_LABEL, "")
        for path in dict.fromkeys([*models, *([chosen] if chosen else [])]):
            self.model.addItem(Path(path).name, path)
            self.model.setItemData(self.model.count() - 1, path, Qt.ItemDataRole.ToolTipRole)  # the whole path
        self.model.setCurrentIndex(max(0, self.model.findData(chosen)))
        form = QFormLayout()
        form.addRow("Embedding model", self.model)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(form)
        layout.addWidget(
            hint(
                "A project's documents too large to send whole are split into passages, and each question is sent "
                "with those that fit it. Without an embedding model passages are found by their words; with one, "
                "also by meaning (a passage that says the same thing in other words). The model runs in a process "
                "of its own, and changing it indexes the documents again. Get models offers one."
            )
        )
        if not models:
            layout.addWidget(hint("No embedding model is in the library yet (nomic-embed-text, bge-small)."))
        layout.addStretch(1)

    def chosen(self) -> str:
        """The chosen model's path ("" for None)."""
        return str(self.model.currentData() or "")
