"""Reading the chat database for damage after the window shows, so a large history never delays the start.

A damaged file is then offered exactly as one found at start is (app.ui.shell.main.open_store): quit, or move it aside
and start fresh with every chat that can still be read.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from PySide6.QtCore import QObject, Signal

from app.store.db import find_damage
from app.ui.widgets.background import Background


class DamageWatch(QObject):
    """Checks one database file once, off the GUI thread. GUI thread only."""

    sig_damaged = Signal(str)
    """(message): the file is damaged; the message says how, for a person."""

    def __init__(self, path: Path, parent=None):
        super().__init__(parent)
        self._path = Path(path)
        self._background = Background("store check", self)

    def start(self) -> None:
        self._background.run(lambda: find_damage(self._path), self._on_checked)

    def busy(self) -> bool:
        """Whether the answer has not come back yet."""
        return self._background.busy()

    def _on_checked(self, problem: Optional[str]) -> None:
        self._background.close()  # one check: its thread need not idle on for a next one that never comes
        if problem:
            self.sig_damaged.emit(problem)
