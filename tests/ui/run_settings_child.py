"""Open the real window's Settings in a process of its own and say what it shows and what it loaded.

Used by tests of the boundary: the window's process must never load llama.cpp, even with the local API's server
listening in it. SPECCHAT_HOME comes from the environment. Prints "api: <url>" (where the API listens), "before:
<bool>" (llama_cpp loaded before Settings opened), "first: <devices text>" (what Settings showed at once), "devices:
<text>" (once the engine process answered) and "after: <bool>", then exits.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The checkout this file is in, ahead of any installed copy of the app (an editable install may point elsewhere).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtCore import QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication  # noqa: E402

from app.store import AppSettings, save_settings  # noqa: E402
from app.ui.settings.dialog import LISTING_DEVICES, AppSettingsDialog  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402
from app.ui.widgets import automation  # noqa: E402


def _one_line(text: str) -> str:
    return text.replace("\n", " | ")


def main() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    save_settings(
        AppSettings(model_folders=[], scan_hf_cache=False, threads=1, context_size=2048, api_server=True, api_port=port)
    )
    app = QApplication([])
    window = MainWindow()
    window.show()
    print(f"api: {window.api_server.state.url}", flush=True)
    print(f"before: {'llama_cpp' in sys.modules}", flush=True)

    def look() -> None:
        dialog = QApplication.activeModalWidget()
        assert isinstance(dialog, AppSettingsDialog), dialog
        print(f"first: {_one_line(dialog.devices.text())}", flush=True)
        automation.wait_until(lambda: dialog.devices.text() != LISTING_DEVICES, 60, "the devices")
        print(f"devices: {_one_line(dialog.devices.text())}", flush=True)
        print(f"after: {'llama_cpp' in sys.modules}", flush=True)
        dialog.reject()

    QTimer.singleShot(0, look)
    window.open_app_settings()
    window.close()
    app.processEvents()
    return 0


if __name__ == "__main__":
    sys.exit(main())
