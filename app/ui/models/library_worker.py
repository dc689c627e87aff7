"""The library thread: scans model folders and checks draft compatibility off the GUI thread.

It is separate from the engine process so that a long generation never delays the library, and reading GGUF
headers never delays a generation. Neither loads weights. The work runs through the window's one background idiom
(app.ui.widgets.background) on one thread, so scans and checks run one at a time, in order.
"""

from __future__ import annotations

import threading
import traceback
from typing import Callable

from PySide6.QtCore import QObject, Signal

from app import library
from app.engine.targets import Target
from app.ui.widgets.background import Background


class LibraryThread(QObject):
    """The GUI-side handle of the library thread. GUI thread only; its signals are emitted on the GUI thread."""

    sig_scanned = Signal(int, object)
    """(request_id, list[ModelEntry]): a scan finished."""
    sig_drafts_checked = Signal(int, object, object)
    """(request_id, Target, list[DraftChoice]): the library judged as drafts for that target."""
    sig_failed = Signal(int, str)
    """(request_id, message): a scan or check failed unexpectedly."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._cancel = threading.Event()
        self._background = Background("library", self)

    def request_scan(self, request_id: int, folders: list) -> None:
        """Inspect every .gguf file in `folders` (LibraryFolder records); a newer scan supersedes this one."""
        self._background.run(
            lambda: library.scan_library(folders, cancel=self._cancel),
            lambda entries: self.sig_scanned.emit(request_id, entries),
            self._failure(request_id, "Scanning the model folders failed"),
            lane="scan",
        )

    def request_draft_check(self, request_id: int, target: Target, candidates: list) -> None:
        """Judge every candidate ModelEntry as a draft for `target`. Every check answers (a lane of its own):
        the model session keeps each target's verdicts, also those it no longer waits for."""
        self._background.run(
            lambda: library.draft_choices(target, candidates),
            lambda choices: self.sig_drafts_checked.emit(request_id, target, choices),
            self._failure(request_id, "Checking which drafts fit failed"),
            lane=f"drafts {request_id}",
        )

    def _failure(self, request_id: int, what: str) -> Callable[[BaseException], None]:
        def failed(exc: BaseException) -> None:
            traceback.print_exception(type(exc), exc, exc.__traceback__)
            self.sig_failed.emit(request_id, f"{what}: {exc}")

        return failed

    def stop(self, timeout_ms: int = 2000) -> bool:
        """Abandon pending work and end the thread; returns False if it did not end in time.

        A scan checks the cancel flag before each folder and file, so this is quick unless the disk itself hangs
        (a dead network share); then the thread, a daemon, is left to finish on its own rather than freeze the
        window, and nothing it finds is shown.
        """
        self._cancel.set()
        return self._background.close(wait_s=timeout_ms / 1000)
