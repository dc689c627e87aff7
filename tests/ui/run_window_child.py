"""Run the real window in a process of its own with the scripted engine, pick a model and send a message.

Used by tests that kill the whole app. argv: MODEL_FOLDER TARGET_PATH FAKE_ENGINE_FOLDER MESSAGE. SPECCHAT_HOME
comes from the environment. Prints "streaming" once the reply is being written, then keeps running.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
# The checkout this file is in, ahead of any installed copy of the app (an editable install may point elsewhere).
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.store import AppSettings, save_settings  # noqa: E402
from app.ui.widgets import automation  # noqa: E402
from app.ui.models.library_model import NGRAM_KEY  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402
from tests.ui.fake_engine import FakeEngineControl  # noqa: E402


def main() -> int:
    folder, target, engine_folder, message = sys.argv[1:5]
    save_settings(AppSettings(model_folders=[folder], scan_hf_cache=False, threads=1, context_size=2048))
    app = QApplication([])
    control = FakeEngineControl.__new__(FakeEngineControl)
    object.__setattr__(control, "folder", Path(engine_folder))
    window = MainWindow(engine_factory=control)
    window.show()
    automation.choose_pair(window, target, NGRAM_KEY, timeout_s=60)
    window.send_message(message)
    automation.wait_until(lambda: "word30" in window.chat_view.streamed_text(), 30, "the reply to stream")
    print("streaming", flush=True)
    return app.exec()


if __name__ == "__main__":
    sys.exit(main())
