"""Versions of a message in the window: the switcher's arrows and Alt+Left / Alt+Right move the chat to another version of a
regenerated reply or an edited message (app.store.branches), and a regenerated reply's fresh seed.

The chat remembers the version shown (the store keeps it as the current branch), and the engine is sent the current
branch only: everything else reads the chat as stored. GUI thread only.
"""

from __future__ import annotations

import dataclasses
import random
from typing import Optional

from PySide6.QtCore import QObject, Signal
from PySide6.QtGui import QAction, QKeySequence

from app.engine.config import GenerationConfig
from app.store import ChatStore, StoreError
from app.ui.chat.conversation import Conversation

# A regenerated reply at temperature 0 would spell the first one again, token for token: it is sampled at this
# temperature instead (a new seed alone changes nothing under greedy decoding). The chat's setting is unchanged.
REGENERATE_TEMPERATURE = 0.7


def regenerate_config(config: GenerationConfig) -> GenerationConfig:
    """The request of a regenerated reply: a fresh seed, so the new version can differ from the ones before."""
    return dataclasses.replace(
        config, seed=random.randrange(1, 2**31), temperature=config.temperature or REGENERATE_TEMPERATURE
    )


class VersionSwitcher(QObject):
    """Switches the open chat between the versions of its messages. GUI thread only."""

    sig_error = Signal(str)
    """The switch could not be stored."""
    sig_switched = Signal(int)
    """(chat_id): another version is now the chat's current branch."""

    def __init__(self, store: ChatStore, conversation: Conversation, parent=None):
        super().__init__(parent)
        self.store = store
        self.conversation = conversation

    def step(self, message_id: int, step: int) -> bool:
        """Show the version before (-1) or after (+1) the shown version `message_id`; False when there is none."""
        chat_id = self.conversation.chat_id
        if chat_id is None:
            return False
        versions = self.store.versions(chat_id).get(message_id)
        if versions is None:
            return False
        other = versions.previous if step < 0 else versions.following
        if other is None:
            return False
        self.conversation.stop()  # a reply streaming into the version being left is kept there
        try:
            switched = self.store.switch_version(chat_id, message_id, other)
        except StoreError as exc:
            self.sig_error.emit(str(exc))
            return False
        if switched:
            self.conversation.reload()
            self.sig_switched.emit(chat_id)
        return switched

    def step_newest(self, step: int) -> bool:
        """The keyboard's switch: the newest message of the chat that has versions."""
        newest = self.newest()
        return newest is not None and self.step(newest, step)

    def newest(self) -> Optional[int]:
        chat_id = self.conversation.chat_id
        return max(self.store.versions(chat_id), default=None) if chat_id is not None else None


def attach(window) -> VersionSwitcher:
    """Give `window` (MainWindow) the switcher: the transcript's arrows and the Alt+Left / Alt+Right keys."""
    switcher = VersionSwitcher(window.store, window.conversation, window)
    window.chat_view.sig_switch_version.connect(switcher.step)
    switcher.sig_error.connect(window.show_error)
    switcher.sig_switched.connect(window.chat_lists.refresh)
    for text, keys, step in (("Previous version", "Alt+Left", -1), ("Next version", "Alt+Right", 1)):
        action = QAction(text, window)
        action.setShortcut(QKeySequence(keys))
        action.triggered.connect(lambda _checked=False, s=step: switcher.step_newest(s))
        window.addAction(action)
    return switcher
