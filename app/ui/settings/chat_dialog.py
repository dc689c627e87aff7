"""The chat's generation settings: system prompt, sampling, reply length, drafting and thinking. GUI thread only."""

from __future__ import annotations

import dataclasses
from typing import Optional, Sequence

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QPlainTextEdit,
    QSpinBox,
    QVBoxLayout,
)

from app.engine.config import MAX_DRAFT
from app.store import ChatSettings
from app.store.presets import Preset
from app.store.presets import applied as presets_applied
from app.ui.settings.chat_presets import NO_PRESET, PRESETS_EXPLAINED
from app.ui.settings.pages import TOOLS_CHECK, hint
from app.ui.settings.thinking_group import TemplateSwitches, ThinkingGroup

AUTO_PENALTY = 0.95  # the repeat penalty box's least value, shown as "Auto" (ChatSettings.repeat_penalty None)


class ChatSettingsDialog(QDialog):
    """System prompt and sampling settings of one chat; they apply from the next message."""

    def _update_sampling(self) -> None:
        """Top-p and Top-k only matter when sampling: temperature 0 always takes the likeliest token."""
        sampling = self.temperature.value() > 0
        tip = (
            ""
            if sampling
            else "Temperature 0 always takes the likeliest token, so Top-p and Top-k change "
            "nothing; raise the temperature to use them."
        )
        for box, what in (
            (self.top_p, "Keep the likeliest tokens whose chances add up to this share"),
            (self.top_k, "Keep only this many of the likeliest tokens"),
        ):
            box.setEnabled(sampling)
            box.setToolTip(tip or what)

    def __init__(
        self,
        settings: ChatSettings,
        parent=None,
        switches: TemplateSwitches | None = None,
        presets: Sequence[Preset] = (),
    ):
        super().__init__(parent)
        self.setWindowTitle("Chat settings")
        self.setMinimumWidth(460)
        self._original = settings
        self._presets = list(presets)
        self._chosen: Optional[Preset] = None
        layout = QVBoxLayout(self)
        form = QFormLayout()
        form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)

        # Choosing a preset fills the fields below (and, on OK, the chat's speculation and drafter) with its values.
        self.preset = QComboBox()
        self.preset.addItem(settings.preset or NO_PRESET, None)  # said as the chat's header says it
        for preset in self._presets:
            self.preset.addItem(preset.name, preset.name)
        self.preset.setToolTip(PRESETS_EXPLAINED)
        self.preset.activated.connect(self._on_preset)
        form.addRow("Preset", self.preset)

        self.system_prompt = QPlainTextEdit(settings.system_prompt)
        self.system_prompt.setPlaceholderText("You are a helpful assistant.")
        self.system_prompt.setFixedHeight(90)
        form.addRow("System prompt", self.system_prompt)

        self._add_sampling(form, settings)
        self._add_reply_limits(form, settings)
        layout.addLayout(form)
        self.thinking = ThinkingGroup(settings, switches or TemplateSwitches())
        layout.addWidget(self.thinking)
        layout.addWidget(hint("Changes apply from the next message. Models are not reloaded."))

        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self._accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

    def _accept(self) -> None:
        if not self.thinking.check():
            self.accept()

    def markers(self) -> tuple[str, ...]:
        """The thinking markers set for the chat's model file ((): its template's own)."""
        return self.thinking.markers()

    def choose_preset(self, name: str) -> None:
        self._on_preset(self.preset.findData(name))

    def _on_preset(self, index: int) -> None:
        preset = next((p for p in self._presets if p.name == self.preset.itemData(index)), None)
        if preset is None:
            return
        self.preset.setCurrentIndex(index)
        self._chosen = preset
        self.system_prompt.setPlainText(preset.system_prompt)
        self.temperature.setValue(preset.temperature)
        self.top_p.setValue(preset.top_p)
        self.top_k.setValue(preset.top_k)
        self.max_tokens.setValue(preset.max_tokens)
        self.tools.setChecked(preset.tools)

    def settings(self) -> ChatSettings:
        chosen = self._chosen
        return self.thinking.apply(
            dataclasses.replace(
                presets_applied(self._original, chosen) if chosen is not None else self._original,
                preset=chosen.name if chosen is not None else self._original.preset,
                system_prompt=self.system_prompt.toPlainText().strip(),
                temperature=round(self.temperature.value(), 2),
                top_p=round(self.top_p.value(), 2),
                top_k=self.top_k.value(),
                seed=None if self.seed.value() < 0 else self.seed.value(),
                max_tokens=self.max_tokens.value(),
                repeat_penalty=(
                    None if self.repeat_penalty.value() <= AUTO_PENALTY else round(self.repeat_penalty.value(), 2)
                ),
                draft_max=self.draft_max.value() or None,
                tools=self.tools.isChecked(),
            )
        )

    def _add_sampling(self, form: QFormLayout, settings: ChatSettings) -> None:
        """How each token is chosen: temperature, top-p, top-k and the seed."""
        self.temperature = QDoubleSpinBox()
        self.temperature.setRange(0.0, 2.0)
        self.temperature.setSingleStep(0.05)
        self.temperature.setDecimals(2)
        self.temperature.setValue(settings.temperature)
        self.temperature.setToolTip("0 is greedy: the same reply with or without speculation, only faster")
        form.addRow("Temperature", self.temperature)

        self.top_p = QDoubleSpinBox()
        self.top_p.setRange(0.0, 1.0)
        self.top_p.setSingleStep(0.05)
        self.top_p.setDecimals(2)
        self.top_p.setValue(settings.top_p)
        form.addRow("Top-p", self.top_p)

        self.top_k = QSpinBox()
        self.top_k.setRange(0, 1000)
        self.top_k.setSpecialValueText("Off")
        self.top_k.setValue(settings.top_k)
        form.addRow("Top-k", self.top_k)
        self.temperature.valueChanged.connect(self._update_sampling)
        self._update_sampling()

        self.seed = QSpinBox()
        self.seed.setRange(-1, 2**31 - 1)
        self.seed.setSpecialValueText("Random")
        self.seed.setValue(-1 if settings.seed is None else settings.seed)
        form.addRow("Seed", self.seed)

    def _add_reply_limits(self, form: QFormLayout, settings: ChatSettings) -> None:
        """How long a reply runs and what shapes it: max tokens, repeat penalty, draft length, tools."""
        self.max_tokens = QSpinBox()
        self.max_tokens.setRange(1, 131072)
        self.max_tokens.setSingleStep(128)
        self.max_tokens.setValue(settings.max_tokens)
        self.max_tokens.setToolTip(
            "A reply stops here even mid-sentence (Continue under it writes on); raise it for "
            "long answers such as whole files"
        )
        form.addRow("Max tokens", self.max_tokens)

        self.repeat_penalty = QDoubleSpinBox()
        self.repeat_penalty.setRange(AUTO_PENALTY, 2.0)  # its least value is Auto; one step up is 1.00 (off)
        self.repeat_penalty.setSingleStep(0.05)
        self.repeat_penalty.setDecimals(2)
        self.repeat_penalty.setSpecialValueText("Auto")
        self.repeat_penalty.setValue(settings.repeat_penalty or AUTO_PENALTY)
        self.repeat_penalty.setToolTip(
            "Makes tokens already written less likely (1.00: off). Auto is off, but 1.10 "
            "for a model without a chat template written as raw completion, which would "
            "otherwise repeat itself"
        )
        form.addRow("Repeat penalty", self.repeat_penalty)

        self.draft_max = QSpinBox()
        self.draft_max.setRange(0, MAX_DRAFT)
        self.draft_max.setSpecialValueText("Auto")
        self.draft_max.setValue(settings.draft_max or 0)
        self.draft_max.setToolTip(
            "How many tokens the drafter proposes per round. Auto lets SpecChat adapt it each round, "
            "and pause speculation where verifying costs more than it saves."
        )
        form.addRow("Draft max tokens", self.draft_max)
        self.tools = QCheckBox(TOOLS_CHECK)
        self.tools.setChecked(settings.tools)
        self.tools.setToolTip("Their descriptions go into every prompt of this chat; other chats are not offered them")
        form.addRow("Tools", self.tools)


__all__ = ["ChatSettingsDialog"]
