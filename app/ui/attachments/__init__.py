"""What waits to be sent with the next message: files and pictures attached in the composer, and their size.

- attachment_tray.py: The files waiting to be sent with the next message: one chip each above the composer, read (and refused) at once.
- file_drop.py: Files dropped anywhere on the window are attached to the next message; the gauge counts them before sending.
- picture_counts.py: The exact size in tokens of each picture waiting in the composer, counted by the engine's projector.
"""
