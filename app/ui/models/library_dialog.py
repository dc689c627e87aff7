"""The model library window: every .gguf file found, its facts, and why a file cannot be used."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHeaderView,
    QLabel,
    QTableView,
    QVBoxLayout,
)

from app.ui.widgets.layouts import button_row
from app.ui.models.library_model import LibraryModel


class LibraryDialog(QDialog):
    """A table over the shared LibraryModel, with Rescan and Add folder. GUI thread only."""

    sig_rescan = Signal()
    """The user asked to scan the folders again."""
    sig_add_folder = Signal()
    """The user asked to add a folder."""

    def __init__(self, model: LibraryModel, folders_text: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Model library")
        self.resize(900, 460)
        layout = QVBoxLayout(self)
        self.summary = QLabel()
        self.summary.setObjectName("Muted")
        self.summary.setWordWrap(True)
        layout.addWidget(self.summary)
        self.table = QTableView()
        self.table.setModel(model)
        self.table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.verticalHeader().hide()
        self.table.setShowGrid(False)
        self.table.setAlternatingRowColors(False)
        self.table.setWordWrap(False)
        header = self.table.horizontalHeader()
        header.setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)  # over the cells' text
        for column in range(model.columnCount() - 1):
            header.setSectionResizeMode(column, QHeaderView.ResizeMode.ResizeToContents)
        header.setSectionResizeMode(model.columnCount() - 1, QHeaderView.ResizeMode.Stretch)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        layout.addWidget(self.table, 1)
        self.folders = QLabel(folders_text)
        self.folders.setObjectName("Muted")
        self.folders.setWordWrap(True)
        self.folders.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.folders)
        layout.addLayout(button_row([("Add folder…", self.sig_add_folder), ("Scan again", self.sig_rescan)],
                                    [("Close", self.accept)]))
        model.modelReset.connect(lambda: self._update_summary(model))
        self._update_summary(model)

    def set_folders_text(self, text: str) -> None:
        self.folders.setText(text)

    def _update_summary(self, model: LibraryModel) -> None:
        entries = model.entries()
        usable = sum(1 for e in entries if e.usable)
        broken = len(entries) - usable
        text = f"{usable} usable model{'s' if usable != 1 else ''}"
        if broken:
            text += f", {broken} file{'s' if broken != 1 else ''} that cannot be used (the Status column says why)"
        self.summary.setText(text + ".")
