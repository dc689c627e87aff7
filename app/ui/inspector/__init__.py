"""The per-reply inspector: a window of charts about one reply's speculation rounds.

- charts.py: The inspector's four charts, drawn with pyqtgraph from a ReplyInspection (app/replies/inspector_data.py).
- controller.py: Opens the per-reply inspector when the user clicks a reply's stats row. GUI thread only.
- window.py: The per-reply inspector: a window with one reply's rounds as four charts, which can be saved as one PNG.
"""
