"""One model file's own settings: context size, GPU layers, thinking and the load settings, each either its own or
left to Settings, with what the model then takes in memory; and the projector a vision model reads pictures with. Saved in settings.json's `model_defaults` by the window
(app.ui.models.model_actions). GUI thread only."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QSpinBox, QVBoxLayout

from app.common.units import plural
from app.engine.config import GPU_LAYERS_ALL, GPU_LAYERS_AUTO
from app.library import ModelEntry
from app.store import AppSettings
from app.store.model_defaults import ModelDefaults
from app.ui.models.projector_field import ProjectorField
from app.ui.settings.load_form import FROM_SETTINGS, LoadSettingsFields, MemoryLine
from app.ui.settings.pages import hint

_GPU_FROM_SETTINGS = GPU_LAYERS_AUTO - 1


class ModelGpuLayers(QSpinBox):
    """GPU layers for one model: as in Settings, Auto, a number, or All."""

    def __init__(self, value: Optional[int]):
        super().__init__()
        self.setRange(_GPU_FROM_SETTINGS, GPU_LAYERS_ALL)
        self.setValue(_GPU_FROM_SETTINGS if value is None else value)
        self.setToolTip(
            "Layers of this model on the GPU. Auto offloads what fits in the free GPU memory; 0 runs "
            "it on the CPU; All offloads every layer."
        )

    def textFromValue(self, value: int) -> str:
        return {_GPU_FROM_SETTINGS: FROM_SETTINGS, GPU_LAYERS_AUTO: "Auto"}.get(
            value, "All" if value >= GPU_LAYERS_ALL else str(value)
        )

    def valueFromText(self, text: str) -> int:
        typed = text.strip().lower()
        words = {"as in settings": _GPU_FROM_SETTINGS, "auto": GPU_LAYERS_AUTO, "all": GPU_LAYERS_ALL}
        for word, value in words.items():
            if typed and word.startswith(typed):
                return value
        return super().valueFromText(text)

    def validate(self, text: str, pos: int):
        typed = text.strip().lower()
        for word in ("as in settings", "auto", "all"):
            if typed and word.startswith(typed):
                state = QValidator.State.Acceptable if typed == word else QValidator.State.Intermediate
                return state, text, pos
        return super().validate(text, pos)

    def chosen(self) -> Optional[int]:
        return None if self.value() == _GPU_FROM_SETTINGS else self.value()


class ModelSettingsDialog(QDialog):
    """The editor; `settings()` is what the file keeps once accepted."""

    def __init__(
        self,
        entry: ModelEntry,
        defaults: ModelDefaults,
        app: AppSettings,
        memory_line: Optional[MemoryLine] = None,
        parent=None,
    ):
        super().__init__(parent)
        # The file is named in the sentence below, which wraps: in the title a long file name was cut off.
        self.setWindowTitle("Model settings")
        self.setMinimumWidth(420)
        layout = QVBoxLayout(self)
        intro = QLabel(f"{entry.name} loads with these; “{FROM_SETTINGS}” follows the app's settings.")
        intro.setWordWrap(True)
        layout.addWidget(intro)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.context_size = QSpinBox()
        trained = entry.context_length or 262144
        self.context_size.setRange(0, max(512, trained))
        self.context_size.setSingleStep(1024)
        self.context_size.setSpecialValueText(f"{FROM_SETTINGS} ({plural(app.context_size, 'token')})")
        self.context_size.setValue(defaults.context_size or 0)
        self.context_size.setToolTip(
            f"The most tokens a chat with this model holds; it was trained for {plural(trained, 'token')}."
        )
        form.addRow("Context size", self.context_size)
        self.gpu_layers = ModelGpuLayers(defaults.gpu_layers)
        form.addRow("GPU layers", self.gpu_layers)
        self.thinking = QComboBox()
        for label, value in ((FROM_SETTINGS, None), ("Think first", True), ("Answer at once", False)):
            self.thinking.addItem(label, value)
        self.thinking.setCurrentIndex(
            max(0, self.thinking.findData(defaults.thinking)) if defaults.thinking is not None else 0
        )
        self.thinking.setEnabled(entry.thinking_switch or defaults.thinking is not None)
        self.thinking.setToolTip(
            "Whether a thinking model reasons before it answers, unless a chat says otherwise"
            if entry.thinking_switch
            else "This model's template has no thinking switch"
        )
        form.addRow("Thinking", self.thinking)
        self.load_fields = LoadSettingsFields(
            form, defaults, per_model=True, memory_line=memory_line, context_box=self.context_size
        )
        self.load_fields.set_app_choices(app.flash_attention, app.kv_cache_type)
        self.projector = ProjectorField(Path(entry.path), defaults.projector, form) if entry.server is None else None
        layout.addLayout(form)
        layout.addWidget(hint("Saved for this file. If it is loaded, SpecChat asks before loading it again."))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _accept(self) -> None:
        if not self.load_fields.check():  # the sentence is on show; a refused combination is never saved
            self.accept()

    def settings(self) -> ModelDefaults:
        load = self.load_fields.values()
        return ModelDefaults(
            context_size=self.context_size.value() or None,
            gpu_layers=self.gpu_layers.chosen(),
            thinking=self.thinking.currentData(),
            batch_size=load.batch_size,
            flash_attention=load.flash_attention,
            kv_cache_type=load.kv_cache_type,
            use_mmap=load.use_mmap,
            use_mlock=load.use_mlock,
            projector=self.projector.chosen() if self.projector is not None else None,
        )
