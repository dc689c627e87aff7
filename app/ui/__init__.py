"""The Qt window. The only package that imports PySide6."""

from app.ui import _pyside_fix

_pyside_fix.install()
