"""A check for a PySide6 build that would crash the app: shiboken6 6.12.0 on Python < 3.12 returns None and True
from Python calls without taking a reference (it assumes they are immortal, as they are only from Python 3.12).
Every call of a void Qt method then lowers None's reference count, and after a few thousand calls the interpreter
aborts ("deallocating None").

The problem is measured, not guessed from version numbers, so a fixed build passes however it is numbered.
"""

from __future__ import annotations

import sys

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
