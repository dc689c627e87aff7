"""The open chat's header: which model writes it and how it speculates, and, where the chat was written with a
model other than the loaded one, the question whether to load that model or go on with the loaded one.

Opening a chat never swaps the loaded model by itself: that model also answers the local API, so a swap would
change what other programs get without anyone asking for it. GUI thread only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox, QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.store import ChatSettings
from app.ui.chat.settings_binding import draft_key
from app.ui.settings import chat_presets
from app.ui.models.library_model import NGRAM_KEY
from app.ui.widgets.notice_row import NoticeRow


class PresetCombo(QComboBox):
    """The header's preset picker; it says when it is about to open, so its list can be filled fresh."""

    sig_opening = Signal()
    """The list is about to drop down."""

    def showPopup(self) -> None:
        self.sig_opening.emit()
        super().showPopup()


class ChatHeader(QFrame):
    """The header's widgets: one line of what the chat uses with its preset beside it, and the question (hidden
    until asked)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setObjectName("ChatHeader")
        column = QVBoxLayout(self)
        column.setContentsMargins(28, 6, 28, 2)
        column.setSpacing(4)
        self.top = QWidget()  # the summary and the preset: shown once the chat has a model
        top_row = QHBoxLayout(self.top)
        top_row.setContentsMargins(0, 0, 0, 0)
        self.summary = QLabel("")
        self.summary.setObjectName("Muted")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.PlainText)
        top_row.addWidget(self.summary, 1)
        # The chat's preset, chosen here as in Chat settings (app/ui/settings/chat_presets.py fills and wires it).
        self.preset = PresetCombo()
        self.preset.setAccessibleName("Preset")
        self.preset.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        top_row.addWidget(self.preset, 0, Qt.AlignmentFlag.AlignTop)
        column.addWidget(self.top)
        self.question = NoticeRow("ErrorBanner", (10, 4, 4, 4))
        self.question_text = self.question.label
        self.load_button = self.question.add(QPushButton("Load it"))
        self.keep_button = self.question.add(QPushButton("Keep the loaded one"))
        self.keep_button.setObjectName("FlatButton")
        column.addWidget(self.question)


class ChatModelGuard(QObject):
    """Shows the header for each chat and asks before its model replaces the loaded one. GUI thread only."""

    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        self.header = ChatHeader()
        self._asked: Optional[ChatSettings] = None  # the chat settings whose model the question offers
        self.header.load_button.clicked.connect(self.load_chat_model)
        self.header.keep_button.clicked.connect(self.keep_loaded_model)
        window.chat_settings.sig_changed.connect(lambda _settings: self.refresh())
        window.engine_process.sig_models_loaded.connect(lambda _loaded: self.refresh())
        window.model_bar.sig_speculative_toggled.connect(lambda _on: self.refresh())
        window.session.sig_selection_changed.connect(self.refresh)
        window.conversation.sig_busy_changed.connect(self._on_busy)

    def asking(self) -> bool:
        """The question is on screen (the chat's model is not loaded and nobody has said what to do)."""
        return self._asked is not None

    def show_chat(self, settings: ChatSettings) -> None:
        """A chat was opened: its models are selected, unless that would replace a loaded target (then ask)."""
        session = self.window.session
        entry = self.window.library.entry_for(settings.target)
        self._asked = None
        if session.target is not None and entry is not None and entry.usable and entry.target != session.target:
            self._asked = settings
        else:
            session.show_chat_models(settings.target, draft_key(settings))
        self.refresh()

    def load_chat_model(self) -> None:
        """Yes: load the chat's own model (and draft)."""
        settings, self._asked = self._asked, None
        if settings is not None:
            self.window.session.show_chat_models(settings.target, draft_key(settings))
        self.refresh()

    def keep_loaded_model(self) -> None:
        """No: the chat goes on with the loaded model, and says so from now on."""
        if self._asked is None:
            return
        self._asked = None
        session = self.window.session
        self.window.update_chat_settings(target_path=session.target_key())
        self.refresh()

    def _on_busy(self, busy: bool) -> None:
        if busy and self._asked is not None:  # a message sent while asked goes to the loaded model: that is the answer
            self.keep_loaded_model()

    def refresh(self) -> None:
        window = self.window
        settings = window.chat_settings.current()
        if window.conversation.chat_id is None:  # a new chat is stored with the bar's models: say those
            settings = window.chat_settings.for_new_chat(
                window.session.target_key(), window.session.draft_key, window.model_bar.speculative()
            )
        checking = window.conversation.chat_id is None and window.drafts.is_checking()
        self.header.summary.setText(self.summary_text(settings, checking))
        self.header.top.setVisible(bool(settings.target_path))
        chat_presets.fill(self.header.preset, self.window.chat_settings.presets_source(), settings.preset)
        asked = self._asked
        if asked is not None:
            chat_model, loaded = self.model_name(asked.target_path), self.model_name(self.window.session.target_key())
            self.header.question_text.setText(
                f"This chat was written with {chat_model}, but {loaded} is loaded (it also answers the local API). "
                f"Load {chat_model} for this chat, or go on with {loaded}?"
            )
            # The sentence names both models; the buttons stay short, so that long model names never hold the
            # window wider than a small screen (they set a 954-pixel minimum with Qwen's and Gemma's names).
            self.header.load_button.setToolTip(f"Load {chat_model}")
            self.header.keep_button.setToolTip(f"Keep {loaded}")
        self.header.question.setVisible(asked is not None)

    def summary_text(self, settings: ChatSettings, checking: bool = False) -> str:
        """'Qwen2.5-Coder 1.5B · speculative, drafts by Qwen2.5-Coder 0.5B' and the like, then ' · tools on' where
        the chat offers the model tools. `checking`: the target's drafts are being checked, so no draft is chosen
        yet (the Draft box says "Checking drafts…" meanwhile)."""
        tools = " · tools on" if settings.tools else ""
        return self._decoding_text(settings, checking) + tools

    def _decoding_text(self, settings: ChatSettings, checking: bool) -> str:
        model = self.model_name(settings.target_path)
        if not settings.speculative:
            return f"{model} · plain decoding (no speculation)"
        if checking:
            return f"{model} · speculative, its drafts being checked…"
        key = draft_key(settings)
        if key == NGRAM_KEY or not key:
            drafter = "copies from earlier text (n-gram)"
        else:
            # The controller also copies earlier text where that pays better: the stats row may name n-gram too.
            drafter = f"drafts by {self.model_name(key)}, or copies earlier text"
        length = f", {settings.draft_max} tokens a round" if settings.draft_max else ""
        return f"{model} · speculative, {drafter}{length}"

    def model_name(self, path: Optional[str]) -> str:
        entry = self.window.library.entry_for(path)
        return entry.name if entry is not None else (Path(path).stem if path else "no model")


def attach(window) -> ChatModelGuard:
    """The header above `window`'s transcript, and the guard that fills it."""
    guard = ChatModelGuard(window, window)
    window.pages.widget(0).layout().insertWidget(0, guard.header)
    return guard
