"""Settings > Presets: add, rename, duplicate and delete named presets of a chat's system prompt, sampling and draft
setting (app.store.presets). The built-in Default is shown read-only and cannot be deleted. GUI thread only."""

from __future__ import annotations

import dataclasses
from typing import Optional

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QInputDialog,
    QListWidget,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from app.store.presets import DEFAULT_PRESET, Preset, free_name
from app.ui.settings.pages import TOOLS_CHECK, hint
from app.ui.widgets.layouts import button_row


class PresetsPage(QWidget):
    """The presets being edited; `presets()` is what OK stores. GUI thread only."""

    def __init__(self, presets: list[Preset], parent=None):
        super().__init__(parent)
        self._presets = list(presets)
        self._shown: Optional[int] = None
        self.names = QListWidget()
        self.names.setMaximumHeight(100)
        self.system_prompt = QPlainTextEdit()
        self.system_prompt.setPlaceholderText("How the model should answer (optional)")
        self.system_prompt.setMaximumHeight(90)
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.1)
        self.top_p = QDoubleSpinBox()
        self.top_p.setRange(0.0, 1.0)
        self.top_p.setSingleStep(0.05)
        self.top_k = QSpinBox()
        self.top_k.setRange(0, 1000)
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(16, 131072)
        self.max_tokens.setSingleStep(256)
        self.speculative = QCheckBox("Speculative decoding")
        self.tools = QCheckBox(TOOLS_CHECK)
        self.drafter = QComboBox()
        self.drafter.addItem("The chat's draft model", False)
        self.drafter.addItem("N-gram lookup (no second model)", True)
        form = QFormLayout()
        form.addRow("System prompt", self.system_prompt)
        form.addRow("Temperature", self.temperature)
        form.addRow("Top-p", self.top_p)
        form.addRow("Top-k", self.top_k)
        form.addRow("Max tokens", self.max_tokens)
        form.addRow("", self.speculative)
        form.addRow("Draft with", self.drafter)
        form.addRow("", self.tools)
        self.fields = QWidget()
        self.fields.setLayout(form)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(
            hint(
                "Choose one for a chat in its header or its Chat settings; its prompt, sampling, draft setting "
                "and tools apply from the next message. Default is the built-in settings."
            )
        )
        layout.addWidget(self.names)
        layout.addLayout(
            button_row(
                [
                    ("Add", self.add),
                    ("Rename…", self._ask_rename),
                    ("Duplicate", self.duplicate),
                    ("Delete", self.delete),
                ]
            )
        )
        layout.addWidget(self.fields)
        self.names.currentRowChanged.connect(self._show)
        self._fill(0)

    def presets(self) -> list[Preset]:
        self._keep_shown()
        return list(self._presets)

    def _fill(self, row: int) -> None:
        self._shown = None
        self.names.clear()
        self.names.addItems([p.name + (" (built-in)" if p.name == DEFAULT_PRESET else "") for p in self._presets])
        self.names.setCurrentRow(row)

    def _show(self, row: int) -> None:
        self._keep_shown()
        if not 0 <= row < len(self._presets):
            return
        preset = self._presets[row]
        self.system_prompt.setPlainText(preset.system_prompt)
        self.temperature.setValue(preset.temperature)
        self.top_p.setValue(preset.top_p)
        self.top_k.setValue(preset.top_k)
        self.max_tokens.setValue(preset.max_tokens)
        self.speculative.setChecked(preset.speculative)
        self.drafter.setCurrentIndex(1 if preset.draft_ngram else 0)
        self.tools.setChecked(preset.tools)
        self.fields.setEnabled(preset.name != DEFAULT_PRESET)  # the built-in is ChatSettings' own defaults
        self._shown = row

    def _keep_shown(self) -> None:
        row = self._shown
        if row is None or self._presets[row].name == DEFAULT_PRESET:
            return
        self._presets[row] = dataclasses.replace(
            self._presets[row],
            system_prompt=self.system_prompt.toPlainText(),
            temperature=self.temperature.value(),
            top_p=self.top_p.value(),
            top_k=self.top_k.value(),
            max_tokens=self.max_tokens.value(),
            speculative=self.speculative.isChecked(),
            draft_ngram=bool(self.drafter.currentData()),
            tools=self.tools.isChecked(),
        )

    def _current(self) -> int:
        return max(0, self.names.currentRow())

    def add(self) -> None:
        self._keep_shown()
        self._presets.append(Preset(free_name(self._presets, "New preset")))
        self._fill(len(self._presets) - 1)

    def duplicate(self) -> None:
        self._keep_shown()
        source = self._presets[self._current()]
        self._presets.append(dataclasses.replace(source, name=free_name(self._presets, f"{source.name} copy")))
        self._fill(len(self._presets) - 1)

    def rename(self, name: str) -> bool:
        """Rename the selected preset; False (nothing changes) for the built-in or an empty name."""
        row = self._current()
        if self._presets[row].name == DEFAULT_PRESET or not name.strip():
            return False
        self._keep_shown()
        others = self._presets[:row] + self._presets[row + 1 :]
        self._presets[row] = dataclasses.replace(self._presets[row], name=free_name(others, name))
        self._fill(row)
        return True

    def _ask_rename(self) -> None:
        name, ok = QInputDialog.getText(self, "Rename preset", "Name", text=self._presets[self._current()].name)
        if ok:
            self.rename(name)

    def delete(self) -> bool:
        """Delete the selected preset; False for the built-in Default, which stays."""
        row = self._current()
        if self._presets[row].name == DEFAULT_PRESET:
            return False
        self._shown = None
        del self._presets[row]
        self._fill(min(row, len(self._presets) - 1))
        return True
