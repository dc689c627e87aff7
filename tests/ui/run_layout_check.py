"""The window, Settings and the inspector on a screen of a given size and scale, in a process of its own (a
screen is chosen when Qt starts). argv: WIDTH HEIGHT SCALE MODEL_FOLDER FAKE_ENGINE_FOLDER; SPECCHAT_HOME from the
environment. Prints one JSON line: the screen's available size and each widget's layout problems."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path

width, height, scale = (float(arg) for arg in sys.argv[1:4])
_config = Path(tempfile.mkdtemp()) / "screen.json"
_config.write_text(
    json.dumps(
        {
            "screens": [
                {
                    "name": "Laptop",
                    "x": 0,
                    "y": 0,
                    "width": int(width),
                    "height": int(height),
                    "logicalDpi": 96,
                    "logicalBaseDpi": 96,
                    "dpr": 1,
                }
            ]
        }
    )
)
os.environ["QT_QPA_PLATFORM"] = f"offscreen:configfile={_config}"
os.environ["QT_SCALE_FACTOR"] = f"{scale:g}"
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.store.provenance import RoundRecord  # noqa: E402
from app.engine.events import GenerationStats  # noqa: E402
from app.store import AppSettings, save_settings  # noqa: E402
from app.ui.inspector.window import ReplyInspector  # noqa: E402
from app.ui.settings.dialog import AppSettingsDialog  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402
from app.ui.transcript.format import TranscriptMessage  # noqa: E402
from app.ui.widgets import automation  # noqa: E402
from tests.ui.fake_engine import FakeEngineControl  # noqa: E402
from tests.ui.layout_checks import layout_problems  # noqa: E402


def main() -> None:
    folder, engine_folder = sys.argv[4:6]
    save_settings(AppSettings(model_folders=[folder], scan_hf_cache=False, threads=1, context_size=2048))
    app = QApplication([])
    control = FakeEngineControl.__new__(FakeEngineControl)
    object.__setattr__(control, "folder", Path(engine_folder))
    window = MainWindow(engine_factory=control)
    window.show()
    automation.wait_until(window.library_ready, 30, "the model scan")
    app.processEvents()
    report = {
        "screen": [app.primaryScreen().availableGeometry().width(), app.primaryScreen().availableGeometry().height()],
        "window": [window.width(), window.height()],
        "main window": layout_problems(window),
    }
    settings = AppSettingsDialog(window.settings, window, api_state="Off")
    settings.show()
    app.processEvents()
    report["settings"] = layout_problems(settings)
    settings.pages.show_page("Loading and devices")  # the load settings' page
    app.processEvents()
    report["settings"] += layout_problems(settings)
    settings.close()
    window.library_ctl.open_library()
    library = window.library_ctl.library_dialog
    library.table.selectRow(0)
    app.processEvents()
    report["library"] = layout_problems(library)
    editor = window.model_actions.dialog_for(window.library.usable_entries()[0].path)
    editor.show()
    app.processEvents()
    report["model settings"] = layout_problems(editor)
    editor.close()
    library.close()
    inspector = ReplyInspector(window)
    rounds = [
        RoundRecord("model", 4, [1, 2, 3, 4], ["m"] * 4, 2, 1, "o", "draft model", 0.3),
        RoundRecord("none", 0, [], [], 0, 1, "o", "paused", 0.1),
    ]
    inspector.show_message(
        TranscriptMessage(5, "assistant", "x" * 10, None, GenerationStats(tokens=10), "T + D", rounds=rounds)
    )
    inspector.show()
    app.processEvents()
    report["inspector"] = layout_problems(inspector)
    print(json.dumps(report), flush=True)
    window.shutdown()
    sys.stdout.flush()
    os._exit(0)  # no teardown by the garbage collector, which can crash Qt's wrappers at exit


if __name__ == "__main__":
    main()
