"""The library controller: folder scans, the model folders, the Library and Get-models windows, and the pair a
download asked to select once it is scanned.

Files that crashed the engine before are shown unusable with the reason. GUI thread only.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

from PySide6.QtCore import QObject, QUrl, Signal
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QDialog, QFileDialog, QVBoxLayout, QWidget

from app import library
from app.ui.widgets.dialog_folders import remember_folder, start_folder
from app.platform import paths
from app.store import AppSettings
from app.store.unusable_models import unusable_reason
from app.ui.models.library_dialog import LibraryDialog
from app.ui.models.library_model import LibraryModel
from app.ui.models.library_worker import LibraryThread
from app.ui.models.model_bar import ModelBar

if TYPE_CHECKING:  # the panel needs huggingface_hub, which a build may leave out
    from app.ui.get_models.panel import GetModelsPanel


class LibraryController(QObject):
    """Scans the model folders on the library thread and keeps the library model up to date. GUI thread only."""

    sig_scanned = Signal(int)
    """(files found): the latest scan was applied to the library."""
    sig_folders_changed = Signal(list)
    """(folders): the user added a model folder; the app settings should hold this list."""
    sig_error = Signal(str)
    """Something about the library the user should read."""
    sig_load_requested = Signal(str)
    """(path): the library's Load: this file as the target."""
    sig_settings_requested = Signal(str)
    """(path): the library's Model settings for this file."""
    sig_forget_requested = Signal(str)
    """(path): the library's Forget: off the list, the file kept."""
    sig_delete_requested = Signal(str)
    """(path): the library's Delete file (to be asked first)."""
    sig_show_forgotten = Signal()
    """The library's Show forgotten: list the forgotten files again."""

    def __init__(self, model: LibraryModel, bar: ModelBar, settings: Callable[[], AppSettings], window: QWidget):
        super().__init__(window)
        self.model = model
        self.bar = bar
        self._settings = settings
        self._window = window
        self.scanner = LibraryThread(self)  # not `thread`: that is QObject.thread()
        self._scan_id = 0
        self._scanned_id = 0
        self._pending_pair: Optional[tuple[str, Optional[str]]] = None
        self._library_dialog: Optional[LibraryDialog] = None
        self._get_models_dialog: Optional[QDialog] = None
        self.get_models_panel: Optional["GetModelsPanel"] = None
        # Bound methods of this GUI-thread object: the slots run on the GUI thread (a lambda would not).
        self.scanner.sig_scanned.connect(self._on_scanned)
        self.scanner.sig_failed.connect(self._on_failed)

    def folders(self) -> list[library.LibraryFolder]:
        settings = self._settings()
        return library.library_folders(settings.model_folders, settings.scan_hf_cache)

    def rescan(self) -> None:
        self._scan_id += 1
        if not self.model.rowCount():
            self.bar.set_target_placeholder("Scanning for models…")
        self.scanner.request_scan(self._scan_id, self.folders())

    def ready(self) -> bool:
        """The latest scan of the model folders has been applied (False while one is running)."""
        return self._scanned_id == self._scan_id

    def scanned_once(self) -> bool:
        return self._scanned_id > 0

    def has_no_models(self) -> bool:
        """A scan has finished and found nothing usable."""
        return self.scanned_once() and not self.model.usable_entries()

    def take_pending_pair(self) -> Optional[tuple[str, Optional[str]]]:
        """The (target, draft) a finished download asked to select, once; None if there is none."""
        pair, self._pending_pair = self._pending_pair, None
        return pair

    def _on_scanned(self, request_id: int, entries: list) -> None:
        if request_id != self._scan_id:
            return
        self._scanned_id = request_id
        forgotten = set(self._settings().forgotten_models)
        self.model.set_entries(with_crash_verdicts([e for e in entries if e.path not in forgotten]))
        usable = self.model.usable_entries()
        self.bar.set_target_placeholder("Choose a model" if usable else "No models found")
        self.sig_scanned.emit(len(entries))

    def _on_failed(self, _request_id: int, message: str) -> None:
        self.sig_error.emit(message)

    def mark_crashed(self) -> None:
        """A file crashed the engine: show the verdicts again without scanning."""
        self.model.set_entries(with_crash_verdicts(self.model.entries()))

    def mark_changed(self, path: str, _sentence: str = "") -> None:
        """A loaded file changed on disk under the engine: listed as not usable until the next scan reads it again."""
        problem = "It changed on disk while SpecChat was using it. Rescan once the file is complete."
        self.model.set_entries(
            [
                dataclasses.replace(entry, usable=False, problem=problem) if str(entry.path) == path else entry
                for entry in self.model.entries()
            ]
        )

    # ----- folders and windows

    def add_folder(self, folder: Optional[str] = None) -> None:
        """Add a model folder (asking for one when `folder` is None) and scan it."""
        if folder is None:
            folder = QFileDialog.getExistingDirectory(
                self._window, "Add a folder of GGUF models", start_folder("models")
            )
            if not folder:
                return
            remember_folder("models", folder)
        folders = self._settings().model_folders
        if folder in folders:
            self.rescan()
            return
        self.sig_folders_changed.emit([*folders, folder])

    def open_models_folder(self) -> None:
        folder = paths.models_dir()
        folder.mkdir(parents=True, exist_ok=True)
        QDesktopServices.openUrl(QUrl.fromLocalFile(str(folder)))

    def open_library(self) -> None:
        folders = "Scanned folders: " + "; ".join(str(f.path) for f in self.folders())
        if self._library_dialog is None:
            self._library_dialog = LibraryDialog(self.model, folders, self._window)
            self._library_dialog.sig_rescan.connect(self.rescan)
            self._library_dialog.sig_add_folder.connect(self.add_folder)
            self._library_dialog.sig_load.connect(self.sig_load_requested)
            self._library_dialog.sig_model_settings.connect(self.sig_settings_requested)
            self._library_dialog.sig_forget.connect(self.sig_forget_requested)
            self._library_dialog.sig_delete.connect(self.sig_delete_requested)
            self._library_dialog.sig_show_forgotten.connect(self.sig_show_forgotten)
        self._library_dialog.set_folders_text(folders)
        self._library_dialog.show()
        self._library_dialog.raise_()

    @property
    def library_dialog(self) -> Optional[LibraryDialog]:
        """The library window once opened (None before)."""
        return self._library_dialog

    def drop(self, path: str) -> None:
        """Take a file off the list now (a forgotten or deleted one), without scanning."""
        self.model.set_entries([entry for entry in self.model.entries() if entry.path != path])

    def open_get_models(self) -> None:
        """The download panel in its own window; it stays alive when closed, so downloads keep going."""
        if self._get_models_dialog is None:
            panel_class = _get_models_panel_class()
            if panel_class is None:
                self.sig_error.emit(
                    "Downloading is not available in this build. Put .gguf files into "
                    f"{paths.models_dir()} or add a folder that holds them."
                )
                return
            dialog = QDialog(self._window)
            dialog.setWindowTitle("Get models")
            dialog.resize(820, 560)
            layout = QVBoxLayout(dialog)
            panel = self.get_models_panel = panel_class(dialog)
            layout.addWidget(panel)
            panel.sig_models_downloaded.connect(self.rescan)
            panel.sig_pair_downloaded.connect(self._on_pair_downloaded)
            panel.sig_load_model.connect(self._on_pair_downloaded)  # there already: load it
            panel.library_files = lambda: {
                Path(e.path).name: Path(e.path) for e in self.model.entries() if e.source != "server"
            }
            self._get_models_dialog = dialog
        if self.get_models_panel is not None:
            self.get_models_panel.refresh_downloaded()  # files found by scans since it was last shown
        self._get_models_dialog.show()
        self._get_models_dialog.raise_()

    def _on_pair_downloaded(self, target: str, draft: str) -> None:
        """A recommended pair landed, or Get models was asked to load files it holds already: select them once
        the library has been scanned again (draft "": the target alone)."""
        self._pending_pair = (target, draft or None)
        self.rescan()

    def shutdown(self) -> None:
        """End downloads and the library thread."""
        if self.get_models_panel is not None:
            self.get_models_panel.shutdown()
        self.scanner.stop()


def with_crash_verdicts(entries: list) -> list:
    """Library entries, with files that crashed the engine before marked unusable with the reason."""
    marked = []
    for entry in entries:
        reason = unusable_reason(entry.path) if entry.usable else None
        marked.append(dataclasses.replace(entry, usable=False, problem=reason) if reason else entry)
    return marked


def _get_models_panel_class() -> Optional[type[GetModelsPanel]]:
    """The download panel, or None in a build without the hub client (huggingface_hub is optional there)."""
    try:
        from app.ui.get_models.panel import GetModelsPanel
    except ImportError:
        return None
    return GetModelsPanel
