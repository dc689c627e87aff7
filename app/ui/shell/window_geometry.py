"""The main window's size, position and sidebar width, kept between runs. GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QSettings
from PySide6.QtWidgets import QMainWindow, QSplitter

from app.platform import paths


def _window_settings() -> QSettings:
    # An ini file under the config folder, so tests (SPECCHAT_HOME) never touch the user's real settings.
    return QSettings(str(paths.user_config_dir() / "window.ini"), QSettings.Format.IniFormat)


def restore_geometry(window: QMainWindow, splitter: QSplitter) -> None:
    settings = _window_settings()
    geometry = settings.value("geometry")
    if isinstance(geometry, QByteArray) and not geometry.isEmpty():
        window.restoreGeometry(geometry)
    state = settings.value("splitter")
    if isinstance(state, QByteArray) and not state.isEmpty():
        splitter.restoreState(state)


def save_geometry(window: QMainWindow, splitter: QSplitter) -> None:
    """Best effort: a settings file that cannot be written must not stop the app from closing."""
    try:
        settings = _window_settings()
        settings.setValue("geometry", window.saveGeometry())
        settings.setValue("splitter", splitter.saveState())
        settings.sync()
    except Exception:
        pass
