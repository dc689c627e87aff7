"""A check for a PySide6 build that would crash the app: shiboken6 6.12.0 on Python < 3.12 returns None and True
from Python calls without taking a reference (it assumes they are immortal, as they are only from Python 3.12).
Every call of a void Qt method then lowers None's reference count, and after a few thousand calls the interpreter
aborts ("deallocating None").

The problem is measured, not guessed from version numbers, so a fixed build passes however it is numbered.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path
from typing import Iterator

_PROBE_CALLS = 16


def pyside_problem() -> str:
    """Why this PySide6 cannot run SpecChat ("" when it can)."""
    if sys.version_info >= (3, 12):
        return ""  # None and True are immortal there: the bug cannot bite
    import PySide6
    from PySide6.QtCore import QObject

    probe = QObject()
    before = sys.getrefcount(None)
    for _ in range(_PROBE_CALLS):
        probe.setObjectName("probe")  # a void method: should leave None's count as it was
    lost = before - sys.getrefcount(None)
    if lost < _PROBE_CALLS:
        return ""
    import ctypes

    ctypes.pythonapi.Py_IncRef.argtypes = [ctypes.py_object]
    for _ in range(lost):
        ctypes.pythonapi.Py_IncRef(None)  # give back what the probe cost, so reporting the problem is safe
    return (
        f"PySide6 {PySide6.__version__} has a reference-counting bug on Python "
        f"{sys.version_info.major}.{sys.version_info.minor} that crashes SpecChat after a few thousand Qt calls. "
        'Install a working build, for example: pip install "PySide6-Essentials>=6.6,!=6.12.0", '
        "or use Python 3.12 or newer."
    )


_X11_LIBRARIES_HINT = (
    "Qt's X11 plugin needs these libraries: Debian/Ubuntu: sudo apt install libxcb-cursor0 libxcb-icccm4 "
    "libxcb-keysyms1 libxcb-shape0 libxkbcommon-x11-0; Fedora: sudo dnf install xcb-util-cursor xcb-util-wm "
    "xcb-util-keysyms libxkbcommon-x11."
)


def platform_plugin_problem(platform: str) -> str:
    """Why Qt's platform plugin `platform` cannot be loaded here, in the dynamic loader's words ("" if it loads)."""
    from PySide6.QtCore import QLibraryInfo

    folder = Path(QLibraryInfo.path(QLibraryInfo.LibraryPath.PluginsPath)) / "platforms"
    plugins = sorted(folder.glob(f"*q{platform}.*"))
    if not plugins:
        return f'there is no "{platform}" platform plugin in {folder}'
    try:
        ctypes.CDLL(str(plugins[0]))
    except OSError as exc:
        return str(exc)
    return ""


def platform_failure_message(platform: str, qt_said: list[str]) -> str:
    """What to tell the user when Qt's platform plugin did not start, and what to do about it."""
    lines = [f'SpecChat could not open a window: Qt\'s "{platform}" display plugin did not start.']
    loader = platform_plugin_problem(platform)
    if loader:
        lines.append(f"It cannot be loaded: {loader}")
        if platform == "xcb":
            lines.append(_X11_LIBRARIES_HINT)
    elif any("could not connect to display" in line for line in qt_said):
        lines.append(
            f"It could not connect to the X display {os.environ.get('DISPLAY', '')!r}: is the X server "
            "running, and may this user open windows on it (XAUTHORITY)?"
        )
    lines.append(
        "Otherwise: QT_QPA_PLATFORM=wayland in a Wayland session, `xvfb-run specchat` without a screen, "
        "or the command line: specchat-cli --help"
    )
    return "\n".join(lines)


@contextlib.contextmanager
def explain_platform_failure() -> Iterator[None]:
    """Around creating the QApplication: Qt aborts the process when no platform plugin starts (advising to
    reinstall); print what went wrong and how to fix it instead, and exit 1. Other Qt messages pass through."""
    from PySide6.QtCore import QtMsgType, qInstallMessageHandler

    qt_said: list[str] = []

    def handler(mode, context, message):
        line = message if context.category in (None, "", "default") else f"{context.category}: {message}"
        if mode != QtMsgType.QtFatalMsg:
            qt_said.append(line)
            print(line, file=sys.stderr)
            return
        platform = (os.environ.get("QT_QPA_PLATFORM") or "xcb").split(";")[0].split(":")[0]
        print(platform_failure_message(platform, qt_said), file=sys.stderr, flush=True)
        os._exit(1)  # Qt cannot continue, and returning from a fatal message aborts

    previous = qInstallMessageHandler(handler)
    try:
        yield
    finally:
        qInstallMessageHandler(previous)
