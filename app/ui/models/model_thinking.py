"""What the chat settings know of a model's thinking: whether its chat template has a thinking switch and an effort
level (from the library's scan), and the thinking markers the user set for its file, remembered per model file in
the app's settings (AppSettings.reasoning_markers, as chat_formats is). GUI thread only.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from app.ui.settings.thinking_group import TemplateSwitches


class ModelThinking:
    """Reads the library and the app settings of `window` (MainWindow) when asked, never before."""

    def __init__(self, window):
        self.window = window

    def switches(self, path: Optional[str]) -> TemplateSwitches:
        """What the chat settings offer for the model file at `path` (None: no model chosen)."""
        entry = self.window.library.entry_for(path) if path else None
        if entry is None or entry.source == "server":  # a server's template is not known here
            return TemplateSwitches(model_path=None, model_name=entry.name if entry else "")
        return TemplateSwitches(
            thinking=entry.thinking_switch,
            effort=entry.effort_switch,
            model_path=entry.path,
            model_name=entry.name,
            markers=self.markers(entry.path),
        )

    def markers(self, path: Optional[str]) -> tuple[str, ...]:
        """(start, end) set for the model file, () for its template's own (GenerationConfig.reasoning_markers)."""
        markers = self.window.settings.reasoning_markers.get(path or "")
        return tuple(markers) if markers else ()

    def set_markers(self, path: Optional[str], markers: tuple[str, ...]) -> None:
        """Remember (or with (), forget) the markers of the model file; saved at once."""
        if not path or markers == self.markers(path):
            return
        kept = {k: v for k, v in self.window.settings.reasoning_markers.items() if k != path}
        if markers:
            kept[path] = list(markers)
        self.window.settings = dataclasses.replace(self.window.settings, reasoning_markers=kept)
        self.window.save_app_settings()
