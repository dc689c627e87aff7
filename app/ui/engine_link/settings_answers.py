"""What the Settings pages show that only the engine process can find out, and the edit it carries out for them.

The window never loads llama.cpp and never edits the engine's files, so an open Settings dialog asks the engine
process: the devices of its llama.cpp build ("Listing devices…" until the answer, the last answer at once), and
the size of the API clients' own history, whose Clear the engine process carries out. Nothing here blocks the GUI
thread: each answer is a signal of EngineProcess. GUI thread only.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

from app.engine.host.wire import ApiHistoryMeasured
from app.ui.engine_link.engine_process import EngineProcess
from app.ui.settings.api_server_page import ApiServerPage
from app.ui.settings.dialog import AppSettingsDialog


@contextmanager
def api_history_linked(page: ApiServerPage, engine_process: EngineProcess) -> Iterator[None]:
    """While open, `page` shows the API history's size as the engine process measures it, and its Clear is
    carried out there."""

    def show(answer: ApiHistoryMeasured) -> None:
        page.set_history_size(answer.size_bytes)

    shown = engine_process.sig_api_history_measured.connect(show)
    cleared = page.sig_clear_history.connect(lambda: engine_process.request_api_history(clear=True))
    engine_process.request_api_history()
    try:
        yield
    finally:
        engine_process.sig_api_history_measured.disconnect(shown)
        page.sig_clear_history.disconnect(cleared)


@contextmanager
def settings_linked(dialog: AppSettingsDialog, engine_process: EngineProcess) -> Iterator[None]:
    """While open, the Settings dialog gets the engine process's devices and API history."""
    listed = engine_process.sig_devices_listed.connect(dialog.set_devices)
    engine_process.request_devices()
    try:
        with api_history_linked(dialog.api_page, engine_process):
            yield
    finally:
        engine_process.sig_devices_listed.disconnect(listed)
