"""The model library window: every .gguf file found, its facts and what it takes in memory, why a file cannot be
used, and what can be done with the selected one (load it, its own settings, show its folder, forget it)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QTableView,
    QVBoxLayout,
)

from app.library import ModelEntry

from app.ui.widgets.layouts import button_row
from app.ui.models.library_model import LibraryModel


class LibraryDialog(QDialog):
    """A table over the shared LibraryModel, with Rescan and Add folder. GUI thread only."""

    sig_rescan = Signal()
    """The user asked to scan the folders again."""
    sig_add_folder = Signal()
    """The user asked to add a folder."""
    sig_load = Signal(str)
    """(path): load this file as the target."""
    sig_model_settings = Signal(str)
    """(path): edit this file's own settings (context, GPU layers, thinking, load settings)."""
    sig_forget = Signal(str)
    """(path): take this file off the library list; the file stays on disk."""
    sig_delete = Signal(str)
    """(path): delete this file from the disk (the window asks first)."""
    sig_show_forgotten = Signal()
    """List the forgotten files again."""

    def __init__(self, model: LibraryModel, folders_text: str, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Model library")
        screen = (parent.screen() if parent is not None else None) or QGuiApplication.primaryScreen()
        room = screen.availableGeometry().size()  # a small screen gets a smaller window, never one past its edge
        self.resize(min(900, int(room.width() * 0.9)), min(460, int(room.height() * 0.85)))
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
        self._model = model
        actions = QHBoxLayout()
        self.load_button = self._action(actions, "Load", self.sig_load, "Load this model as the target")
        self.settings_button = self._action(
            actions,
            "Model settings…",
            self.sig_model_settings,
            "This model's own context size, GPU layers, thinking and load settings",
        )
        self.reveal_button = self._action(actions, "Show in folder", None, "Open the folder that holds the file")
        self.reveal_button.clicked.connect(self._reveal)
        self.forget_button = self._action(
            actions, "Forget", self.sig_forget, "Take it off this list; the file stays where it is"
        )
        self.delete_button = self._action(
            actions, "Delete file…", self.sig_delete, "Move the file to the trash (asks first)"
        )
        actions.addStretch(1)
        layout.addLayout(actions)
        self.table.selectionModel().selectionChanged.connect(self._update_actions)
        model.modelReset.connect(self._update_actions)
        self._update_actions()
        self.folders = QLabel(folders_text)
        self.folders.setObjectName("Muted")
        self.folders.setWordWrap(True)
        self.folders.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        layout.addWidget(self.folders)
        layout.addLayout(
            button_row(
                [
                    ("Add folder…", self.sig_add_folder),
                    ("Scan again", self.sig_rescan),
                    ("Show forgotten", self.sig_show_forgotten),
                ],
                [("Close", self.accept)],
            )
        )
        model.modelReset.connect(lambda: self._update_summary(model))
        self._update_summary(model)

    def _action(self, row: QHBoxLayout, label: str, signal, tip: str) -> QPushButton:
        button = QPushButton(label)
        button.setToolTip(tip)
        if signal is not None:
            button.clicked.connect(lambda: self._emit_for_selected(signal))
        row.addWidget(button)
        return button

    def selected(self) -> Optional[ModelEntry]:
        rows = self.table.selectionModel().selectedRows()
        return self._model.entry_at(rows[0].row()) if rows else None

    def select(self, path: str) -> None:
        row = self._model.row_of(path)
        if row >= 0:
            self.table.selectRow(row)

    def _emit_for_selected(self, signal) -> None:
        entry = self.selected()
        if entry is not None:
            signal.emit(entry.path)

    def _update_actions(self, *_args) -> None:
        entry = self.selected()
        a_file = entry is not None and entry.source != "server"
        for button in (self.load_button, self.settings_button):
            button.setEnabled(a_file and bool(entry and entry.usable))
        for button in (self.reveal_button, self.forget_button, self.delete_button):
            button.setEnabled(a_file)

    def _reveal(self) -> None:
        entry = self.selected()
        if entry is not None:
            QDesktopServices.openUrl(QUrl.fromLocalFile(str(Path(entry.path).parent)))

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
