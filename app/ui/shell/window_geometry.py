"""The main window's size, position and sidebar width, kept between runs. GUI thread only."""

from __future__ import annotations

from PySide6.QtCore import QByteArray, QRect, QSettings, QSize
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QMainWindow, QSplitter

from app.platform import paths

# The size a first launch asks for; a smaller screen gets its available area instead, never more.
PREFERRED_SIZE = QSize(1180, 780)
# Room left for the window manager's title bar and borders, which Qt only knows once the window is shown.
FRAME_ALLOWANCE = QSize(16, 40)


def _window_settings() -> QSettings:
    # An ini file under the config folder, so tests (SPECCHAT_HOME) never touch the user's real settings.
    return QSettings(str(paths.user_config_dir() / "window.ini"), QSettings.Format.IniFormat)


def available_area(window: QMainWindow) -> QRect:
    """The part of the window's screen (or the primary one) that windows may use: without panels and docks."""
    screen = window.screen() or QGuiApplication.primaryScreen()
    return (
        screen.availableGeometry()
        if screen is not None
        else QRect(0, 0, PREFERRED_SIZE.width(), PREFERRED_SIZE.height())
    )


def fit_to_screen(window: QMainWindow) -> None:
    """Keep the window, frame included, inside its screen's available area: shrink it if it is larger, then move
    it in. A geometry saved on a bigger screen (or a bigger scale) is clamped the same way."""
    area = available_area(window)
    room = area.size() - FRAME_ALLOWANCE
    size = window.size().boundedTo(room).expandedTo(window.minimumSizeHint().boundedTo(room))
    if size != window.size():
        window.resize(size)
    frame = window.frameGeometry()
    x = min(max(frame.x(), area.x()), area.right() + 1 - max(frame.width(), size.width() + FRAME_ALLOWANCE.width()))
    y = min(max(frame.y(), area.y()), area.bottom() + 1 - max(frame.height(), size.height() + FRAME_ALLOWANCE.height()))
    if (x, y) != (frame.x(), frame.y()):
        window.move(max(x, area.x()), max(y, area.y()))


def restore_geometry(window: QMainWindow, splitter: QSplitter) -> None:
    """The saved size and place, or PREFERRED_SIZE centred on a first launch; either fitted to the screen."""
    settings = _window_settings()
    geometry = settings.value("geometry")
    if isinstance(geometry, QByteArray) and not geometry.isEmpty() and window.restoreGeometry(geometry):
        fit_to_screen(window)
    else:
        area = available_area(window)
        size = PREFERRED_SIZE.boundedTo(area.size() - FRAME_ALLOWANCE)
        window.resize(size)
        window.move(
            area.x() + (area.width() - size.width()) // 2,
            area.y() + max(0, (area.height() - size.height() - FRAME_ALLOWANCE.height()) // 2),
        )
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
