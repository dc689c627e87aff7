"""Reading the chat database for damage after the window shows, so a large history never delays the start.

A damaged file is then offered exactly as one found at start is (app.ui.shell.main.open_store): quit, or move it aside
and start fresh with every chat that can still be read.
"""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import QObject, Signal

from app.store.db import find_damage


class DamageWatch(QObject):
    """Checks one database file once, on a thread of its own. Create and connect on the GUI thread."""

    sig_damaged = Signal(str)
    """(message): the file is damaged; the message says how, for a person."""

    def __init__(self, path: Path, parent=None):
        super().__init__(parent)
        self._thread = threading.Thread(target=self._check, args=(Path(path),), name="SpecChat store check",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def wait(self, timeout_s: float) -> bool:
        """For tests: True once the check has finished."""
        self._thread.join(timeout_s)
        return not self._thread.is_alive()

    def _check(self, path: Path) -> None:
        problem = find_damage(path)
        if problem:
            try:
                self.sig_damaged.emit(problem)
            except RuntimeError:
                pass  # the app closed while the file was read
