"""Chat-settings plumbing: the open chat's settings (or a new chat's, until its first message stores it), their
dialog, and the generation settings a request is sent with. GUI thread only.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Optional, cast

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QDialog

from app.engine.config import DrafterChoice, GenerationConfig, ReasoningEffort
from app.store import ChatSettings, ChatStore, StoreError, presets
from app.store.presets import Preset
from app.ui.chat.conversation import Conversation
from app.ui.models.model_thinking import ModelThinking
from app.ui.models.library_model import NGRAM_KEY
from app.ui.settings.chat_dialog import ChatSettingsDialog


class ChatSettingsBinding(QObject):
    """Reads and writes the settings of the chat the conversation shows. GUI thread only."""

    sig_error = Signal(str)
    """The settings could not be stored."""
    sig_changed = Signal(object)
    """(ChatSettings): the open chat's settings (or the new chat's) were changed."""
    sig_new_chat_started = Signal()
    """A new, empty chat was started (start_new): whatever was pending for the last one is dropped."""

    def __init__(
        self, store: ChatStore, conversation: Conversation, parent=None, model_thinking: Optional[ModelThinking] = None
    ):
        super().__init__(parent)
        self.store = store
        self.conversation = conversation
        self.model_thinking = model_thinking  # the chat's model's thinking switches and markers (None: not known)
        self._pending = ChatSettings()  # a new chat's settings, until its first message creates it
        # The presets the dialog offers (the window's AppSettings.presets, the built-in first).
        self.presets_source: Callable[[], list[Preset]] = lambda: []
        # The target selected in the window: a new chat's settings name no model until its first message.
        self.selected_target: Callable[[], Optional[str]] = lambda: None

    def current(self) -> ChatSettings:
        chat_id = self.conversation.chat_id
        if chat_id is not None:
            chat = self.store.get_chat(chat_id)
            if chat is not None:
                return chat.settings
        return self._pending

    def set_draft(self, draft_key: str) -> None:
        """The chat's draft: a model file, or NGRAM_KEY for n-gram lookup."""
        self.update(**draft_fields(draft_key))

    def update(self, **changes) -> None:
        """Change the open chat's settings (or the new chat's, before its first message stores it)."""
        settings = dataclasses.replace(self.current(), **changes)
        chat_id = self.conversation.chat_id
        if chat_id is None:
            self._pending = settings
        else:
            try:
                self.store.update_settings(chat_id, settings)
            except StoreError as exc:
                self.sig_error.emit(str(exc))
                return
        self.sig_changed.emit(settings)

    def apply_preset(self, preset: Preset) -> None:
        """Choose a preset for the open chat (or the new chat): its prompt, sampling and draft setting from now on."""
        new = presets.applied(self.current(), preset)
        self.update(**{name: getattr(new, name) for name in presets.PRESET_FIELDS}, preset=preset.name)

    def start_new(self, target: Optional[str], draft_key: str, speculative: bool) -> ChatSettings:
        """Default settings for a new chat, on the models in use now."""
        self._pending = dataclasses.replace(
            ChatSettings(), target_path=target, speculative=speculative, **draft_fields(draft_key)
        )
        self.sig_new_chat_started.emit()
        return self._pending

    def for_new_chat(self, target: Optional[str], draft_key: str, speculative: bool) -> ChatSettings:
        """The settings a new chat is stored with when its first message is sent."""
        return dataclasses.replace(
            self._pending, target_path=target, speculative=speculative, **draft_fields(draft_key)
        )

    def edit(self) -> None:
        """The chat settings dialog (over the parent window); OK stores what it shows. Its Thinking switches are
        those of the chat's model, or for a new chat of the selected one (disabled where its template has none)."""
        path = self.current().target_path or self.selected_target()
        switches = self.model_thinking.switches(path) if self.model_thinking is not None else None
        dialog = ChatSettingsDialog(self.current(), self.parent(), switches, presets=self.presets_source())
        if dialog.exec() == QDialog.DialogCode.Accepted:
            new = dialog.settings()
            self.update(**{f.name: getattr(new, f.name) for f in dataclasses.fields(new)})
            if self.model_thinking is not None:
                self.model_thinking.set_markers(path, dialog.markers())

    def generation_config(self, speculative: bool, drafter: DrafterChoice) -> GenerationConfig:
        s = self.current()
        markers = self.model_thinking.markers(s.target_path) if self.model_thinking is not None else ()
        return GenerationConfig(
            max_tokens=s.max_tokens,
            temperature=s.temperature,
            top_k=s.top_k,
            top_p=s.top_p,
            seed=s.seed,
            repeat_penalty=s.repeat_penalty or 1.0,
            speculative=speculative,
            drafter=drafter,
            draft_max=s.draft_max,
            thinking=s.thinking,
            reasoning_effort=_effort(s.reasoning_effort),
            thinking_budget=s.thinking_budget,
            reasoning_markers=markers,
        )


def _effort(value: str) -> ReasoningEffort:
    return cast(ReasoningEffort, value if value in ("low", "medium", "high") else "")


def draft_fields(draft_key: str) -> dict:
    """The ChatSettings fields for a draft picker key (a model file, NGRAM_KEY, or "" for none)."""
    if draft_key == NGRAM_KEY:
        return {"draft_path": None, "draft_ngram": True}
    return {"draft_path": draft_key or None, "draft_ngram": False}


def draft_key(settings: ChatSettings) -> str:
    """The draft picker key for a chat's settings ("" when it names no draft)."""
    return NGRAM_KEY if settings.draft_ngram else settings.draft_path or ""
