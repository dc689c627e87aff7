"""What the Model library does with one file: load it as the target, edit its own settings (saved in settings.json's
`model_defaults`), forget it (off the list; the file stays) or delete it (to the trash, asked first, with its size).
GUI thread only."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional, cast

from PySide6.QtCore import QFile, QObject
from PySide6.QtWidgets import QDialog

from app.common.units import format_bytes
from app.engine.config import KvType
from app.engine.targets import Target
from app.store import model_defaults
from app.store.model_defaults import ModelDefaults
from app.ui.models.model_settings_dialog import ModelSettingsDialog


class ModelActions(QObject):
    """The library window's per-file actions, given the window's settings, session and library. GUI thread only."""

    def __init__(self, window):
        super().__init__(window)
        self._window = window
        ctl = window.library_ctl
        ctl.sig_load_requested.connect(self.load)
        ctl.sig_settings_requested.connect(self.edit_settings)
        ctl.sig_forget_requested.connect(self.forget)
        ctl.sig_delete_requested.connect(self.delete_file)
        ctl.sig_show_forgotten.connect(self.show_forgotten)

    def load(self, path: str) -> None:
        self._window.choose_target(path)

    def memory_line(
        self, path: Optional[str], context_size: Optional[int], kv_type: str, app_wide: bool = False
    ) -> str:
        """What `path` takes at that context (None: its own, else the app-wide one) and KV type, in words.
        `app_wide`: the values are Settings' (the file's own context and KV type win) and the line names the file."""
        window = self._window
        entry = window.library.entry_for(path)
        own = model_defaults.for_model(window.settings.model_defaults, path)
        if app_wide:
            context_size, kv_type = own.context_size or context_size, own.kv_cache_type or kv_type
        memory = (
            entry.memory(context_size or own.context_size or window.settings.context_size, cast(KvType, kv_type))
            if entry
            else None
        )
        if entry is None or memory is None:
            return ""
        return f"{entry.name + ': a' if app_wide else 'A'}bout {memory.label}: {memory.detail}."

    def trained_context(self, path: Optional[str]) -> Optional[int]:
        """The context `path` was trained on (None: not in the library, or its header does not say)."""
        entry = self._window.library.entry_for(path)
        return entry.context_length if entry is not None else None

    def dialog_for(self, path: str) -> Optional[ModelSettingsDialog]:
        """The editor for `path`'s own settings (None for a file not in the library)."""
        window = self._window
        entry = window.library.entry_for(path)
        if entry is None:
            return None
        parent = window.library_ctl.library_dialog or window
        return ModelSettingsDialog(
            entry,
            model_defaults.for_model(window.settings.model_defaults, path),
            window.settings,
            lambda ctx, kv: self.memory_line(path, ctx, kv),
            parent,
        )

    def edit_settings(self, path: str) -> None:
        dialog = self.dialog_for(path)
        if dialog is not None and dialog.exec() == QDialog.DialogCode.Accepted:
            self.save_defaults(path, dialog.settings())

    def save_defaults(self, path: str, defaults: ModelDefaults) -> None:
        """Keep `defaults` for `path` (settings.json, written atomically); a loaded file is loaded again with them
        when the person says so. A new projector alone reaches the engine at once: the model is not loaded again."""
        window = self._window
        session = window.session
        before = window.session_load_settings()
        projector_before = model_defaults.for_model(window.settings.model_defaults, path).projector
        changed = model_defaults.with_model(window.settings.model_defaults, path, defaults)
        window.apply_app_settings(dataclasses.replace(window.settings, model_defaults=changed))
        if path != session.target_key():
            return
        if _key(session.loaded_target()) == path and window.session_load_settings() != before:
            if window.confirm(
                "Reload the model?",
                f"{Path(path).stem}'s settings changed. Loading it again with "
                "them takes a moment; a reply being written finishes first. Not now: they apply the "
                "next time it loads.",
                "Reload now",
            ):
                session.request_load()
        elif defaults.projector != projector_before:
            session.request_load()

    def forget(self, path: str) -> None:
        """Off the library list for good (until Show forgotten); the file is not touched."""
        window = self._window
        if path not in window.settings.forgotten_models:
            window.apply_app_settings(
                dataclasses.replace(window.settings, forgotten_models=[*window.settings.forgotten_models, path])
            )
        window.library_ctl.drop(path)

    def show_forgotten(self) -> None:
        window = self._window
        if window.settings.forgotten_models:
            window.apply_app_settings(dataclasses.replace(window.settings, forgotten_models=[]))
            window.library_ctl.rescan()

    def delete_file(self, path: str) -> None:
        """Move the file to the trash after asking, with its size; never the loaded model's file."""
        window = self._window
        entry = window.library.entry_for(path)
        if entry is None:
            return
        if _key(window.session.loaded_target()) == path:
            window.show_error(f"{entry.name} is loaded: choose another model before deleting its file.")
            return
        if not window.confirm(
            "Delete the file?",
            f"Move {entry.file_name} ({format_bytes(entry.file_size)}) from {entry.folder} to the trash?",
            "Move to trash",
        ):
            return
        if not QFile.moveToTrash(path)[0]:
            window.show_error(f"{entry.file_name} could not be moved to the trash; it is still in {entry.folder}.")
            return
        window.library_ctl.drop(path)


def _key(target: Optional[Target]) -> Optional[str]:
    return target.key if target is not None else None


def attach(window) -> ModelActions:
    return ModelActions(window)
