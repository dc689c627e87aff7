"""The window's keys: its shortcuts (as actions, which the shortcuts sheet lists), F1 and Ctrl+/ for that sheet,
and Esc wherever the focus is. GUI thread only."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QAction, QKeyEvent, QKeySequence

from app.ui.shell.shortcuts_sheet import ShortcutsSheet


class _EscapeKey(QObject):
    """Esc that no widget used (the message box uses its own) reaches the window: it stops the reply streaming, else
    clears the chat search. A widget that has a use for Esc (an editor in the chat list, a menu) keeps it."""

    def __init__(self, window):
        super().__init__(window)
        self._window = window

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if (
            watched is self._window
            and event.type() == QEvent.Type.KeyPress
            and isinstance(event, QKeyEvent)
            and event.key() == Qt.Key.Key_Escape
        ):
            window: Any = self._window  # MainWindow (its module imports this one)
            if window.composer.is_busy() or window.composer.is_editing():
                window.composer.escape()
                return True
            if window.sidebar.search.text():
                window.sidebar.search.clear()
                return True
        return False


def attach(window) -> ShortcutsSheet:
    """Give `window` (MainWindow) its shortcuts, the Esc key and the sheet that lists them; returns the sheet."""
    sheet = ShortcutsSheet(window)
    for text, shortcuts, slot in (
        ("New chat", [QKeySequence(QKeySequence.StandardKey.New)], window.new_chat),
        ("Search chats", [QKeySequence(QKeySequence.StandardKey.Find)], window.sidebar.search.setFocus),
        ("Settings", [QKeySequence("Ctrl+,")], window.open_app_settings),
        ("Toggle highlighting", [QKeySequence("Ctrl+Shift+H")], window.legend_row.highlight_switch.click),
        ("Rename chat", [QKeySequence("F2")], window.sidebar.rename_current),
        ("Quit", [QKeySequence("Ctrl+Q")], window.close),
        ("Keyboard shortcuts", [QKeySequence("F1"), QKeySequence("Ctrl+/")], sheet.show_sheet),
    ):
        action = QAction(text, window)
        action.setShortcuts(shortcuts)
        action.triggered.connect(slot)
        if text == "Keyboard shortcuts":
            action.setProperty("specchat_sheet_hidden", True)  # the sheet names its own keys among the typing keys
        window.addAction(action)
    window.installEventFilter(_EscapeKey(window))
    return sheet
