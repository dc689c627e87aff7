"""The load settings' fields (batch, flash attention, KV-cache type, mmap, mlock), shared by Settings (app-wide)
and a model's own settings (where each may also be left to Settings), with what the choice costs in memory and
the sentence for a combination llama.cpp refuses. GUI thread only."""

from __future__ import annotations

from typing import Callable, Optional

from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QSpinBox

from app.engine.config import BATCH_AUTO, load_settings_problem
from app.platform.machine_defaults import default_batch
from app.store import AppSettings
from app.store.model_defaults import MAX_BATCH, ModelDefaults
from app.ui.widgets import style

# "Settings' choice": a model's own field left to the app-wide setting.
FROM_SETTINGS = "As in Settings"
_NOT_SET = -1  # the batch box's value for FROM_SETTINGS

KV_LABELS = {"f16": "f16 (full size)", "q8_0": "q8_0 (about half the memory)", "q4_0": "q4_0 (about a quarter)"}
FLASH_LABELS = {"auto": "Auto (on where the device has it)", "on": "On", "off": "Off"}
_ON_OFF = {True: "On", False: "Off"}

# Memory the fields' values would take: (context size or None for the app-wide one, KV type) -> a line ("" when
# no model is chosen).
MemoryLine = Callable[[Optional[int], str], str]


def _combo(choices: dict, value: object, per_model: bool) -> QComboBox:
    box = QComboBox()
    if per_model:
        box.addItem(FROM_SETTINGS, None)
    for key, label in choices.items():
        box.addItem(label, key)
    box.setCurrentIndex(max(0, box.findData(value)) if value is not None else 0)
    return box


class BatchSpinBox(QSpinBox):
    """Tokens per forward pass: Auto (the engine's default for this machine), a number, or, for one model, the
    app-wide setting."""

    def __init__(self, value: Optional[int], per_model: bool):
        super().__init__()
        self._per_model = per_model
        self.setRange(_NOT_SET if per_model else BATCH_AUTO, MAX_BATCH)
        self.setSingleStep(64)
        self.setValue(_NOT_SET if value is None else value)
        self.setToolTip(
            "Prompt tokens read in one pass. Larger reads long prompts faster and takes a larger "
            "compute buffer (about the batch x the model's width x 4 bytes). Auto: "
            f"{default_batch()} on this machine."
        )

    def textFromValue(self, value: int) -> str:
        if value == _NOT_SET:
            return FROM_SETTINGS
        if value == BATCH_AUTO:
            return f"Auto ({default_batch()})"
        return super().textFromValue(value)

    def valueFromText(self, text: str) -> int:
        typed = text.strip().lower()
        if typed.startswith("auto"):
            return BATCH_AUTO
        if self._per_model and typed.startswith("as in"):
            return _NOT_SET
        return super().valueFromText(text)

    def validate(self, text: str, pos: int):
        from PySide6.QtGui import QValidator

        typed = text.strip().lower()
        for word in ("auto", "as in settings") if self._per_model else ("auto",):
            if typed and (word.startswith(typed) or typed.startswith(word)):
                state = QValidator.State.Acceptable if typed.startswith(word) else QValidator.State.Intermediate
                return state, text, pos
        return super().validate(text, pos)

    def chosen(self) -> Optional[int]:
        return None if self.value() == _NOT_SET else self.value()


class LoadSettingsFields:
    """Adds the load settings' rows to `form`. `per_model`: each may be left to Settings (None in `values`)."""

    def __init__(
        self,
        form: QFormLayout,
        values: ModelDefaults,
        per_model: bool = False,
        memory_line: Optional[MemoryLine] = None,
        context_box: Optional[QSpinBox] = None,
    ):
        self._memory_line = memory_line
        self._context_box = context_box
        self._app = ("auto", "f16")  # Settings' flash attention and KV type, for fields left to Settings
        self.batch = BatchSpinBox(values.batch_size, per_model)
        form.addRow("Batch size", self.batch)
        self.flash_attention = _combo(FLASH_LABELS, values.flash_attention, per_model)
        self.flash_attention.setToolTip(
            "Flash attention computes attention in tiles: less memory for long "
            "contexts, usually faster. A quantized KV cache needs it."
        )
        form.addRow("Flash attention", self.flash_attention)
        self.kv_cache_type = _combo(KV_LABELS, values.kv_cache_type, per_model)
        self.kv_cache_type.setToolTip(
            "The KV cache holds every token of the context. q8_0 halves it and q4_0 "
            "quarters it, at a small cost in quality; both need flash attention."
        )
        form.addRow("KV cache", self.kv_cache_type)
        self.mmap = _combo(_ON_OFF, values.use_mmap, per_model)
        self.mmap.setToolTip(
            "On: the weights are mapped from the file and read as needed, shared with the disk "
            "cache. Off: read into memory at load (slower to load; no page faults later)."
        )
        form.addRow("Memory-map the weights", self.mmap)
        self.mlock = _combo(_ON_OFF, values.use_mlock, per_model)
        self.mlock.setToolTip(
            "On: the weights are locked in RAM, never swapped out. The system may refuse to "
            "lock more than its limit (ulimit -l)."
        )
        form.addRow("Lock the weights in RAM", self.mlock)
        self.memory = QLabel()
        self.memory.setObjectName("Muted")
        self.memory.setWordWrap(True)
        form.addRow("Memory", self.memory)
        self.problem = QLabel()
        self.problem.setWordWrap(True)
        self.problem.setStyleSheet(f"color: {style.ERROR};")
        self.problem.hide()
        form.addRow("", self.problem)
        for box in (self.flash_attention, self.kv_cache_type):
            box.currentIndexChanged.connect(self.update)
        if context_box is not None:
            context_box.valueChanged.connect(self.update)
        self.update()

    def values(self) -> ModelDefaults:
        """The fields as a model's defaults: None where left to Settings."""
        return ModelDefaults(
            batch_size=self.batch.chosen(),
            flash_attention=self.flash_attention.currentData(),
            kv_cache_type=self.kv_cache_type.currentData(),
            use_mmap=self.mmap.currentData(),
            use_mlock=self.mlock.currentData(),
        )

    def check(self) -> str:
        """The sentence for a combination llama.cpp refuses ("" when none); a field left to Settings counts as
        Settings' value."""
        values = self.values()
        return load_settings_problem(values.flash_attention or self._app[0], values.kv_cache_type or self._app[1])

    def update(self, *_args) -> None:
        """Show the refusal sentence, and the memory the chosen context and KV type take."""
        problem = self.check()
        self.problem.setText(problem)
        self.problem.setVisible(bool(problem))
        context = self._context_box.value() if self._context_box is not None else None
        if context is not None and context <= 0:
            context = None  # a model's context left to Settings
        line = self._memory_line(context, self.kv_cache_type.currentData() or self._app[1]) if self._memory_line else ""
        self.memory.setText(line or "Choose a model to see what it takes in memory.")

    def set_app_choices(self, app_flash: str, app_kv: str) -> None:
        """Settings' own flash attention and KV type, which a field left to Settings stands for."""
        self._app = (app_flash, app_kv)
        self.update()


def app_load_values(settings: AppSettings) -> ModelDefaults:
    """The app-wide load settings as the fields read them."""
    return ModelDefaults(
        batch_size=settings.batch_size,
        flash_attention=settings.flash_attention,
        kv_cache_type=settings.kv_cache_type,
        use_mmap=settings.use_mmap,
        use_mlock=settings.use_mlock,
    )


def app_load_fields(values: ModelDefaults) -> dict:
    """The fields' values as AppSettings' fields (none is left to Settings there)."""
    return dict(
        batch_size=values.batch_size if values.batch_size is not None else BATCH_AUTO,
        flash_attention=values.flash_attention or "auto",
        kv_cache_type=values.kv_cache_type or "f16",
        use_mmap=values.use_mmap is not False,
        use_mlock=bool(values.use_mlock),
    )
