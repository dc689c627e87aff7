"""The boundary kept by Settings: the window's process lists no devices itself (that loads llama.cpp, and on a GPU
build starts the driver in the process the design keeps llama.cpp out of); the engine process lists them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from app.ui.settings.dialog import LISTING_DEVICES


@pytest.mark.slow
def test_opening_settings_leaves_llama_cpp_out_of_the_window_s_process_and_still_shows_the_devices():
    done = subprocess.run(
        [sys.executable, str(Path(__file__).resolve().parents[1] / "run_settings_child.py")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    said = dict(line.split(": ", 1) for line in done.stdout.splitlines() if ": " in line)
    assert said["api"].startswith("http://127.0.0.1:")  # the API's server listens in the window's process
    assert said["before"] == "False"
    assert said["first"] == LISTING_DEVICES  # shown at once, without waiting for the engine process
    # The engine process's answer, as the dialog shows a DeviceReport (tests/ui/settings/test_settings_dialogs.py).
    assert "RPC (models on other machines): " in said["devices"] and "Devices unknown" not in said["devices"]
    assert said["after"] == "False"


def test_the_api_history_is_measured_and_cleared_by_the_engine_process(make_window, qtbot):
    from PySide6.QtCore import Qt

    from app.engine.speculation.history_file import HistoryFile, api_history_size, history_path
    from app.ui.engine_link.settings_answers import api_history_linked
    from app.ui.settings.api_server_page import ApiServerChoice, ApiServerPage

    HistoryFile(history_path("api")).add("api", "a request an API client sent")
    window = make_window()
    page = ApiServerPage(ApiServerChoice(False, "127.0.0.1", 8080, None, own_history=True))
    qtbot.addWidget(page)
    assert page.history_size.text() == "…" and not page.clear_history.isEnabled()  # not measured on this thread
    with api_history_linked(page, window.engine_process):
        qtbot.waitUntil(lambda: page.clear_history.isEnabled(), timeout=10000)
        assert page.history_size.text() not in ("…", "empty")
        with qtbot.waitSignal(window.engine_process.sig_api_history_measured, timeout=10000):
            qtbot.mouseClick(page.clear_history, Qt.MouseButton.LeftButton)
        assert page.history_size.text() == "empty" and not page.clear_history.isEnabled()
    assert api_history_size() == 0
