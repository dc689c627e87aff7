"""The Qt window. The only package that imports PySide6."""
