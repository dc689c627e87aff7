"""The keyboard shortcuts sheet (F1, Ctrl+/): every shortcut the window has, read from its actions, so the list
never falls behind them. GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QGridLayout, QLabel, QVBoxLayout, QWidget

# Keys that no window action carries: the message box's own, and Esc, which the window reads itself.
TYPING_KEYS = (
    ("Enter", "Send the message"),
    ("Shift+Enter", "Start a new line in the message"),
    ("Ctrl+V", "Paste text, files or a picture into the message"),
    ("Esc", "Stop the reply; or cancel editing a message; or clear the chat search"),
    ("F1 or Ctrl+/", "Show these shortcuts"),
)


def shortcut_rows(window: QWidget) -> list[tuple[str, str]]:
    """(keys, what they do) for each of `window`'s actions that has a shortcut, then the typing keys."""
    rows = []
    for action in window.actions():
        keys = action.shortcut()
        if keys.isEmpty() or action.property("specchat_sheet_hidden"):
            continue
        rows.append((keys.toString(QKeySequence.SequenceFormat.NativeText), action.text().replace("&", "")))
    return rows + list(TYPING_KEYS)


class ShortcutsSheet(QDialog):
    """A small non-modal sheet; filled again each time it opens."""

    def __init__(self, window: QWidget):
        super().__init__(window)
        self._window = window
        self.setWindowTitle("Keyboard shortcuts")
        layout = self._layout = QVBoxLayout(self)
        self._grid_holder = QWidget()
        layout.addWidget(self._grid_holder)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.close)
        layout.addWidget(buttons)

    def show_sheet(self) -> None:
        holder = QWidget()
        grid = QGridLayout(holder)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setHorizontalSpacing(18)
        for row, (keys, what) in enumerate(shortcut_rows(self._window)):
            key_label = QLabel(f"<b>{keys}</b>")
            key_label.setTextFormat(Qt.TextFormat.RichText)
            grid.addWidget(key_label, row, 0)
            grid.addWidget(QLabel(what), row, 1)
        self._layout.replaceWidget(self._grid_holder, holder)
        self._grid_holder.deleteLater()
        self._grid_holder = holder
        self.show()
        self.raise_()
        self.activateWindow()

    def text(self) -> str:
        """What the sheet lists, one row a line (for tests and screen readers)."""
        return "\n".join(f"{keys}: {what}" for keys, what in shortcut_rows(self._window))
