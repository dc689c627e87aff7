"""The projects' dialogs: a project's settings (name, instructions, model, draft, preset, documents) and the
question a project's deletion asks (keep its chats, or delete them too). GUI thread only."""

from __future__ import annotations

import dataclasses
from typing import Literal, Optional, Sequence

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.store.projects import Project
from app.ui.models.library_model import NGRAM_KEY

ChatsChoice = Literal["keep", "delete"]

IN_USE = "The one in use"


def ask_delete(parent: Optional[QWidget], project: Project, chats: int) -> Optional[ChatsChoice]:
    """Delete the project keeping its chats (they move out of every project), or with them; None: cancelled."""
    box = QMessageBox(QMessageBox.Icon.Question, "Delete project", "", parent=parent)
    if chats:
        box.setText(
            f"Delete the project “{project.name}”? Its {chats} chat{'s' if chats != 1 else ''} can be kept "
            "(they move out of the project) or deleted with it."
        )
        keep = box.addButton("Keep chats", QMessageBox.ButtonRole.AcceptRole)
        delete = box.addButton("Delete chats too", QMessageBox.ButtonRole.DestructiveRole)
    else:
        box.setText(f"Delete the project “{project.name}”? It holds no chats.")
        keep = box.addButton("Delete", QMessageBox.ButtonRole.DestructiveRole)
        delete = None
    box.addButton(QMessageBox.StandardButton.Cancel)
    box.exec()
    clicked = box.clickedButton()
    return "keep" if clicked is keep else "delete" if delete is not None and clicked is delete else None


class ProjectSettingsDialog(QDialog):
    """A project's name, instructions, default model, draft and preset, and its documents (files and folders).

    `models` are (key, name) of the library's usable models; `presets` the preset names offered. GUI thread only.
    """

    def __init__(
        self,
        project: Project,
        models: Sequence[tuple[str, str]],
        presets: Sequence[str],
        parent: Optional[QWidget] = None,
    ):
        super().__init__(parent)
        self.setWindowTitle(f"Project settings — {project.name}")
        self._project = project
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.name = QLineEdit(project.name)
        form.addRow("Name", self.name)
        self.instructions = QPlainTextEdit(project.instructions)
        self.instructions.setPlaceholderText("Added to the system prompt of every chat in the project")
        self.instructions.setMinimumHeight(90)
        form.addRow("Instructions", self.instructions)
        self.model = self._combo([(None, IN_USE), *models], project.target_path)
        form.addRow("Model", self.model)
        drafts = [(None, IN_USE), (NGRAM_KEY, "N-gram lookup (no draft model)"), *models]
        self.draft = self._combo(drafts, project.draft_path)
        form.addRow("Draft", self.draft)
        self.preset = self._combo([(None, "None"), *[(name, name) for name in presets]], project.preset)
        form.addRow("Preset", self.preset)
        layout.addLayout(form)

        note = QLabel("Documents: files and folders the project's chats can draw on.")
        note.setObjectName("Muted")
        note.setWordWrap(True)
        layout.addWidget(note)
        self.documents = QListWidget()
        self.documents.addItems(list(project.documents))
        self.documents.setMinimumHeight(80)
        layout.addWidget(self.documents)
        row = QHBoxLayout()
        for label, slot in (("Add files…", self.add_files), ("Add folder…", self.add_folder), ("Remove", self.remove)):
            button = QPushButton(label)
            button.clicked.connect(slot)
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(520, 520)

    @staticmethod
    def _combo(choices: Sequence[tuple[Optional[str], str]], current: Optional[str]) -> QComboBox:
        combo = QComboBox()
        for key, label in choices:
            combo.addItem(label, key)
        if current is not None and combo.findData(current) < 0:
            combo.addItem(f"{current} (not in the library)", current)  # kept, not silently dropped
        combo.setCurrentIndex(max(0, combo.findData(current)))
        return combo

    def add_documents(self, paths: Sequence[str]) -> None:
        """Add files or folders to the list, each once."""
        shown = set(self.document_paths())
        for path in paths:
            if path and path not in shown:
                self.documents.addItem(path)
                shown.add(path)

    def add_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Add documents to the project")
        self.add_documents(paths)

    def add_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of documents to the project")
        self.add_documents([folder] if folder else [])

    def remove(self) -> None:
        for item in self.documents.selectedItems():
            self.documents.takeItem(self.documents.row(item))

    def document_paths(self) -> list[str]:
        return [self.documents.item(row).text() for row in range(self.documents.count())]

    def project(self) -> Project:
        """The project as the dialog shows it (its name as typed: the store cleans and checks it)."""
        return dataclasses.replace(
            self._project,
            name=self.name.text(),
            instructions=self.instructions.toPlainText(),
            target_path=self.model.currentData(),
            draft_path=self.draft.currentData(),
            preset=self.preset.currentData(),
            documents=tuple(self.document_paths()),
        )
