"""The window's appearance: System, Light or Dark, switched live. GUI thread only.

"System" follows the OS colour scheme through Qt's style hints (Qt 6.5+: QStyleHints.colorScheme and its change
signal). A switch restyles every widget at once (style.apply_style); what was painted into documents and charts is
drawn again in the new colours: the transcript (once the streaming reply has ended, since it is never re-rendered
while a reply streams), the legend, and an open inspector.
"""

from __future__ import annotations

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QApplication

from app.ui.widgets import style
from app.ui.widgets.themes import Theme, resolve_theme


class Appearance(QObject):
    """Keeps the shown theme in step with the user's choice and, for "system", with the OS. GUI thread only."""

    sig_theme_changed = Signal(str)
    """The theme shown changed to this one ("light" or "dark")."""

    def __init__(self, choice: str, parent=None):
        super().__init__(parent)
        self._choice = choice
        self._system_dark = self._os_is_dark()
        QApplication.styleHints().colorSchemeChanged.connect(self._on_os_scheme)

    def choice(self) -> str:
        return self._choice

    def detach(self) -> None:
        """Stop following the OS (the window closes): the style hints are the application's, and a closed window
        that still answered them would restyle the application under the next one."""
        try:
            QApplication.styleHints().colorSchemeChanged.disconnect(self._on_os_scheme)
        except (RuntimeError, TypeError):
            pass  # already detached

    def theme(self) -> Theme:
        return style.current()

    def set_choice(self, choice: str) -> None:
        """Show `choice` ("system", "light" or "dark") from now on."""
        self._choice = choice
        self.apply()

    def apply(self) -> None:
        """Show the theme the choice resolves to, if it is not the one shown (main.py styled the app light)."""
        theme = resolve_theme(self._choice, self._system_dark)
        app = QApplication.instance()
        if theme is style.current() or not isinstance(app, QApplication):
            return
        style.apply_style(app, theme)
        self.sig_theme_changed.emit(theme.name)

    def _on_os_scheme(self, scheme: Qt.ColorScheme) -> None:
        self._system_dark = scheme == Qt.ColorScheme.Dark
        if self._choice == "system":
            self.apply()

    @staticmethod
    def _os_is_dark() -> bool:
        return QApplication.styleHints().colorScheme() == Qt.ColorScheme.Dark


class PaintedParts(QObject):
    """Redraws what was painted in the old theme's colours: the legend, the transcript (after the streaming reply
    ends, never during it) and an open inspector. GUI thread only."""

    def __init__(self, window):
        super().__init__(window)
        self._window = window
        self._transcript_stale = False
        window.conversation.sig_busy_changed.connect(self._on_busy)

    def redraw(self, _theme: str = "") -> None:
        window = self._window
        window.legend_row.show_legend()
        self._redraw_transcript()
        shown = window.inspector.shown_message_id()
        if shown is not None:
            window.inspector.open_message(shown)  # its charts are made anew, in the new colours

    def _redraw_transcript(self) -> None:
        conversation = self._window.conversation
        self._transcript_stale = conversation.is_busy()
        if not self._transcript_stale:
            conversation.reload()

    def _on_busy(self, busy: bool) -> None:
        if not busy and self._transcript_stale:
            self._redraw_transcript()


def attach(window) -> Appearance:
    """Give `window` (MainWindow) its appearance from its settings, and redraw its painted parts on a switch."""
    appearance = Appearance(window.settings.theme, window)
    appearance.sig_theme_changed.connect(PaintedParts(window).redraw)
    appearance.apply()
    return appearance
