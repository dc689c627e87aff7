"""A guard against a reference-counting bug in PySide6 6.12.0: `SignalInstance.emit` returns True without
taking a reference to it. Every emit from Python then lowers True's reference count by one, and on Python < 3.12
(where True is not immortal) the interpreter aborts after a few hundred emits ("deallocating True or False").

The bug is detected, not assumed from a version number: a private signal is emitted a few times and the count of
True compared. Only when it drops is `emit` wrapped to add the missing reference, so a fixed PySide6 (or pinning
PySide6-Essentials != 6.12.0) makes this a no-op.
"""

from __future__ import annotations

import ctypes
import sys

from PySide6.QtCore import QObject, Signal, SignalInstance

_PROBE_EMITS = 8


class _Probe(QObject):
    sig_probe = Signal()
    """Emitted only to measure whether emit keeps True's reference count."""


def _emit_loses_references() -> bool:
    probe = _Probe()
    before = sys.getrefcount(True)
    for _ in range(_PROBE_EMITS):
        result = probe.sig_probe.emit()
        del result
    lost = before - sys.getrefcount(True)
    if lost >= _PROBE_EMITS:
        ctypes.pythonapi.Py_IncRef.argtypes = [ctypes.py_object]
        for _ in range(lost):
            ctypes.pythonapi.Py_IncRef(True)  # give back what the probe itself took
        return True
    return False


def install() -> bool:
    """Wrap SignalInstance.emit if this PySide6 loses references; returns whether it did."""
    if getattr(SignalInstance, "_specchat_fixed", False) or sys.version_info >= (3, 12):
        return False
    if not _emit_loses_references():
        return False
    original = SignalInstance.emit
    incref = ctypes.pythonapi.Py_IncRef
    incref.argtypes = [ctypes.py_object]

    def emit(self, *args):
        result = original(self, *args)
        if result is True or result is False:
            incref(result)  # the reference emit should have returned
        return result

    SignalInstance.emit = emit
    SignalInstance._specchat_fixed = True
    return True
