"""Model settings' "Projector (for pictures)" row: the mmproj a vision model reads pictures with, the one found beside
it (app.engine.gguf.mmproj) unless another file is chosen. A chosen file is checked against the model at once, from
both headers: one that is no projector, or one made for another model, gets a sentence and is not taken. GUI thread
only."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtWidgets import QFileDialog, QFormLayout, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.engine.gguf.mmproj import mmproj_beside, projector_problem
from app.ui.widgets import style

ROW_LABEL = "Projector (for pictures)"


class ProjectorField(QWidget):
    """The projector's name and where it comes from, Choose… and Use the one beside it; `chosen()` is what the
    model's settings keep (None: the one beside it)."""

    def __init__(self, model: Path, chosen: Optional[str], form: QFormLayout):
        super().__init__()
        self._model = model
        self._beside = mmproj_beside(model)
        self._chosen = chosen
        column = QVBoxLayout(self)  # the name on its own line: a long one never squeezes the buttons
        column.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel()
        self.label.setWordWrap(True)
        column.addWidget(self.label)
        row = QHBoxLayout()
        column.addLayout(row)
        self.choose_button = QPushButton("Choose…")
        self.choose_button.setToolTip("Pick the projector file (an mmproj-*.gguf) made for this model")
        self.choose_button.clicked.connect(self.choose)
        row.addWidget(self.choose_button)
        self.beside_button = QPushButton("Use the one beside it")
        self.beside_button.setToolTip("Forget the chosen file: the projector found beside the model is used")
        self.beside_button.clicked.connect(self.use_beside)
        row.addWidget(self.beside_button)
        row.addStretch(1)
        form.addRow(ROW_LABEL, self)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(f"color: {style.ERROR};")
        self.problem.hide()
        form.addRow("", self.problem)
        self._show()

    def chosen(self) -> Optional[str]:
        return self._chosen

    def choose(self) -> None:
        picked, _ = QFileDialog.getOpenFileName(
            self, f"The projector for {self._model.stem}", str(self._model.parent), "Projectors (*.gguf);;All files (*)"
        )
        if picked:
            self.take(Path(picked))

    def take(self, path: Path) -> None:
        """Use `path` when it fits the model; else say why, and keep the choice as it was."""
        problem = projector_problem(path, self._model)
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        if not problem:
            self._chosen = None if path == self._beside else str(path)
            self._show()

    def use_beside(self) -> None:
        self._chosen = None
        self.problem.hide()
        self._show()

    def _show(self) -> None:
        if self._chosen is not None:
            text, tip = f"{Path(self._chosen).name} (chosen)", self._chosen
        elif self._beside is not None:
            text, tip = f"{self._beside.name} (beside the model)", str(self._beside)
        else:
            text, tip = "None: this model cannot see pictures", "No mmproj-*.gguf lies beside the model."
        self.label.setText(text)
        self.label.setToolTip(tip)
        self.beside_button.setEnabled(self._chosen is not None)
