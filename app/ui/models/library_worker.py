"""The library thread: scans model folders and checks draft compatibility off the GUI thread.

It is separate from the engine process so that a long generation never delays the library, and reading GGUF
headers never delays a generation. Neither loads weights.
"""

from __future__ import annotations

import threading
import traceback

from PySide6.QtCore import QObject, QThread, Signal, Slot

from app import library


class LibraryWorker(QObject):
    """Lives on the library thread; every slot runs there. Only `LibraryThread` creates and moves it."""

    sig_scanned = Signal(int, object)
    """(request_id, list[ModelEntry]): a scan finished."""
    sig_drafts_checked = Signal(int, str, object)
    """(request_id, target_path, list[DraftChoice]): the library judged as drafts for that target."""
    sig_failed = Signal(int, str)
    """(request_id, message): a scan or check failed unexpectedly."""

    def __init__(self, cancel: threading.Event):
        super().__init__()
        self._cancel = cancel

    @Slot(int, object)
    def scan(self, request_id: int, folders: list) -> None:
        """Inspect every .gguf file in `folders` (LibraryFolder records)."""
        try:
            entries = library.scan_library(folders, cancel=self._cancel)
        except Exception as exc:
            traceback.print_exc()
            self.sig_failed.emit(request_id, f"Scanning the model folders failed: {exc}")
            return
        if not self._cancel.is_set():
            self.sig_scanned.emit(request_id, entries)

    @Slot(int, str, object)
    def check_drafts(self, request_id: int, target_path: str, candidates: list) -> None:
        """Judge every candidate ModelEntry as a draft for `target_path`."""
        if self._cancel.is_set():
            return
        try:
            choices = library.draft_choices(target_path, candidates)
        except Exception as exc:
            traceback.print_exc()
            self.sig_failed.emit(request_id, f"Checking which drafts fit failed: {exc}")
            return
        if not self._cancel.is_set():
            self.sig_drafts_checked.emit(request_id, target_path, choices)


class LibraryThread(QObject):
    """The GUI-side handle of the library thread. GUI thread only."""

    _sig_scan = Signal(int, object)
    """Queued to LibraryWorker.scan."""
    _sig_check_drafts = Signal(int, str, object)
    """Queued to LibraryWorker.check_drafts."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self._cancel = threading.Event()
        self._thread = QThread()
        self._thread.setObjectName("SpecChat library")
        self.worker = LibraryWorker(self._cancel)
        self.worker.moveToThread(self._thread)
        self._thread.finished.connect(self.worker.deleteLater)
        self._sig_scan.connect(self.worker.scan)
        self._sig_check_drafts.connect(self.worker.check_drafts)
        self._thread.start()

    def request_scan(self, request_id: int, folders: list) -> None:
        self._sig_scan.emit(request_id, folders)

    def request_draft_check(self, request_id: int, target_path: str, candidates: list) -> None:
        self._sig_check_drafts.emit(request_id, target_path, candidates)

    def is_running(self) -> bool:
        return self._thread.isRunning()

    def stop(self, timeout_ms: int = 2000) -> bool:
        """Abandon pending work and end the thread; returns False if it did not end in time.

        A scan checks the cancel flag before each folder and file, so this is quick unless the disk itself hangs
        (a dead network share); then the thread is left to finish on its own rather than freeze the window.
        """
        self._cancel.set()
        self._thread.quit()
        if self._thread.wait(timeout_ms):
            return True
        # Destroying a running QThread aborts the process: keep it referenced until it ends.
        thread = self._thread
        _still_running.add(thread)
        thread.finished.connect(lambda: _still_running.discard(thread))
        return False


_still_running: set = set()  # QThreads stop() gave up waiting for
