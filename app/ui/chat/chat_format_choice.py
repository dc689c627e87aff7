"""A model file without a chat template: one sentence under the chat's header, and the choice of how its prompts
are written (raw completion, a built-in template, or a template file), remembered per model file in the app's
settings (AppSettings.chat_formats). Until the user chooses, such a model gets raw completion: a base model given
chat markers it never learned imitates them (the Gemma 3 270M file looped on <|im_start|>user). GUI thread only.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QObject
from PySide6.QtWidgets import QComboBox, QFileDialog

from app.common.bounded_read import FileReadError, read_text_bounded
from app.ui.widgets.dialog_folders import remember_folder, start_folder
from app.ui.widgets.notice_row import NoticeRow
from app.engine.config import GenerationConfig
from app.engine.local.chat_format import BUILT_IN_TEMPLATES

RAW = "raw"
BUILT_IN = "builtin:"
FILE = "file:"
CHOOSE_FILE = "choose-file"
MAX_TEMPLATE_BYTES = 1 << 20
# The repeat penalty raw completion gets where the chat leaves it automatic: LM Studio's default, since a base model
# continuing text alone (the Gemma 3 270M file) otherwise repeats itself to the token limit.
RAW_REPEAT_PENALTY = 1.1


def sentence(model_name: str) -> str:
    return (
        f"{model_name} has no chat template, so SpecChat cannot know how it expects a conversation. "
        "Write its prompts as:"
    )


class ChatFormatChoice(QObject):
    """The sentence and the picker, shown while the chosen target has no template of its own. GUI thread only."""

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        self.row = NoticeRow("ChatFormatRow", (28, 2, 28, 2))
        self.label = self.row.label
        self.picker = self.row.add(QComboBox())
        self.picker.setToolTip("How the conversation is turned into this model's prompt; remembered for this file")
        # As narrow as a short name: the longest choice's words would otherwise hold the window wider than 800 pixels.
        self.picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.picker.setMinimumContentsLength(16)
        self.picker.addItem("Raw completion (the text alone, no chat markers)", RAW)
        for name in BUILT_IN_TEMPLATES:
            self.picker.addItem(f"{name} template", BUILT_IN + name)
        self.picker.addItem("Template file…", CHOOSE_FILE)
        self.picker.activated.connect(self._on_picked)
        self._templates: dict[str, str] = {}  # file path -> its text, read once it is chosen
        window.engine_process.sig_models_loaded.connect(lambda _loaded: self.refresh())
        window.session.sig_selection_changed.connect(self.refresh)
        window.chat_settings.sig_changed.connect(lambda _settings: self.refresh())

    def _target_without_template(self) -> Optional[str]:
        entry = self.window.library.entry_for(self.window.session.target)
        if entry is None or entry.source == "server" or entry.has_chat_template:
            return None
        return entry.path

    def choice(self, path: Optional[str] = None) -> str:
        """The remembered choice for `path` (default: the chosen target): RAW until the user picks another."""
        path = path or self.window.session.target_key() or ""
        return self.window.settings.chat_formats.get(path, RAW)

    def refresh(self) -> None:
        """Shown for the selected target; not while the chat's header asks whether to load the chat's own model
        (a chat written with another model is not told about the loaded one's template until it goes on with it)."""
        path = self._target_without_template()
        if self.window.chat_header.asking():
            path = None
        self.row.setVisible(path is not None)
        if path is None:
            return
        entry = self.window.library.entry_for(path)
        self.label.setText(sentence(entry.name))
        chosen = self.choice(path)
        if chosen.startswith(FILE):
            name = f"Template file: {Path(chosen[len(FILE) :]).name}"
            if self.picker.findData(chosen) < 0:
                self.picker.insertItem(self.picker.count() - 1, name, chosen)
        self.picker.setCurrentIndex(max(0, self.picker.findData(chosen)))

    def apply(self, config: GenerationConfig) -> GenerationConfig:
        """`config` with the prompt format of the chosen target (unchanged for a model with its own template)."""
        path = self._target_without_template()
        if path is None:
            return config
        chosen = self.choice(path)
        if chosen.startswith(BUILT_IN) and chosen[len(BUILT_IN) :] in BUILT_IN_TEMPLATES:
            return dataclasses.replace(
                config, chat_format="template", chat_template=BUILT_IN_TEMPLATES[chosen[len(BUILT_IN) :]]
            )
        if chosen.startswith(FILE):
            template = self._read_template(chosen[len(FILE) :])
            if template is not None:
                return dataclasses.replace(config, chat_format="template", chat_template=template)
        automatic = self.window.chat_settings.current().repeat_penalty is None
        return dataclasses.replace(
            config, chat_format="raw", repeat_penalty=RAW_REPEAT_PENALTY if automatic else config.repeat_penalty
        )

    def _on_picked(self, row: int) -> None:
        path = self._target_without_template()
        value = self.picker.itemData(row)
        if path is None:
            return
        if value == CHOOSE_FILE:
            value = self._ask_for_file()
            if value is None:
                self.refresh()  # back to what it was
                return
        self._remember(path, value)

    def _ask_for_file(self) -> Optional[str]:
        file_name, _ = QFileDialog.getOpenFileName(
            self.window,
            "Chat template (Jinja)",
            start_folder("template"),
            "Templates (*.jinja *.j2 *.txt *.tmpl);;All files (*)",
        )
        if not file_name or self._read_template(file_name) is None:
            return None
        remember_folder("template", file_name)
        return FILE + file_name

    def _read_template(self, file_name: str) -> Optional[str]:
        if file_name in self._templates:
            return self._templates[file_name]
        try:
            text = read_text_bounded(file_name, MAX_TEMPLATE_BYTES)
        except FileReadError as exc:
            self.window.show_error(f"The template file {exc}; raw completion is used instead.")
            return None
        self._templates[file_name] = text
        return text

    def _remember(self, path: str, value: str) -> None:
        formats = {**self.window.settings.chat_formats, path: value}
        self.window.settings = dataclasses.replace(self.window.settings, chat_formats=formats)
        self.window.save_app_settings()
        self.refresh()


def attach(window) -> ChatFormatChoice:
    """The row under the chat's header in `window`."""
    choice = ChatFormatChoice(window, window)
    layout = window.pages.widget(0).layout()
    layout.insertWidget(layout.indexOf(window.chat_header.header) + 1, choice.row)
    return choice
