"""The window's "Export chat…": a chat written as Markdown or as JSON with every token and round (app.replies.export), to a
file the user picks. From the chat list's context menu (any chat) or Ctrl+Shift+E (the open chat). GUI thread only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Optional

from PySide6.QtCore import QObject, Signal
from app.ui.widgets.dialog_folders import remember_folder, start_folder
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog

from app.replies import export
from app.store import StoreError

MARKDOWN_FILTER = "Markdown (*.md)"
JSON_FILTER = "JSON with every token and round (*.json)"
_FILTER_FORMATS = {MARKDOWN_FILTER: "markdown", JSON_FILTER: "json"}


def file_name_for(title: str, fmt: str = "markdown") -> str:
    """A file name from a chat's title: what file systems refuse or scripts trip over becomes "-"."""
    stem = re.sub(r"[^\w .,()+-]+", "-", " ".join(title.split())).strip(" .-")[:80] or "chat"
    return stem + export.SUFFIXES[fmt]


class ChatExporter(QObject):
    """Asks where to export a chat, then writes it whole or not at all."""

    sig_exported = Signal(str)
    """(path): a chat was written there."""
    sig_error = Signal(str)
    """A sentence saying why the chat was not exported."""

    def __init__(self, window):
        super().__init__(window)
        self._window = window

    def export_chat(self, chat_id: Optional[int] = None) -> None:
        """Export `chat_id` (default: the open chat) to a file chosen in a dialog."""
        store = self._window.store
        chat_id = chat_id if chat_id is not None else self._window.conversation.chat_id
        chat = store.get_chat(chat_id) if chat_id is not None else None
        if chat is None:
            self.sig_error.emit("There is no chat to export yet: open one, or send a message first.")
            return
        path, chosen = self.ask_path(str(Path(start_folder("export")) / file_name_for(chat.title)))
        if path:
            self.write(chat.id, path, chosen)

    def ask_path(self, suggested: str) -> tuple[str, str]:
        """(path, chosen filter) from a save dialog; ("", "") when the user cancels."""
        return QFileDialog.getSaveFileName(self._window, "Export chat", suggested, f"{MARKDOWN_FILTER};;{JSON_FILTER}")

    def write(self, chat_id: int, path: str, chosen_filter: str = "") -> bool:
        """Write the chat; the file's suffix, else the chosen filter, decides the format (a missing suffix is
        added)."""
        target = Path(path)
        fmt = export.format_for_path(target) or _FILTER_FORMATS.get(chosen_filter, "markdown")
        if not target.suffix:
            target = target.with_suffix(export.SUFFIXES[fmt])
        try:
            export.write_export(self._window.store, chat_id, target, fmt)
        except StoreError as exc:
            self.sig_error.emit(f"The chat could not be exported: {exc}")
            return False
        except OSError as exc:
            self.sig_error.emit(f"The chat could not be exported to {target}: {exc.strerror or exc}.")
            return False
        remember_folder("export", str(target))
        self.sig_exported.emit(str(target))
        return True


def attach(window) -> ChatExporter:
    """Give `window` (MainWindow) its Export chat action, shortcut and chat-list menu entry."""
    exporter = ChatExporter(window)
    action = QAction("Export chat…", window)
    action.setShortcut(QKeySequence("Ctrl+Shift+E"))
    action.triggered.connect(lambda: exporter.export_chat())
    window.addAction(action)
    window.sidebar.sig_export_requested.connect(exporter.export_chat)
    exporter.sig_error.connect(window.show_error)
    return exporter
