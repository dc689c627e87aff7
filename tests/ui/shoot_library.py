"""Screenshots of the Model library with each model's memory, and a model's own settings, in both themes, for the
user guide: python tests/ui/shoot_library.py OUT_DIR [MODEL_FOLDER]. The folder's GGUF headers are read; no model is
loaded (the real test models when ~/.cache/specchat-test-models holds them, else the synthetic set)."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ["SPECCHAT_HOME"] = tempfile.mkdtemp()
sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from PySide6.QtWidgets import QApplication  # noqa: E402

from app.store import AppSettings, save_settings  # noqa: E402
from app.ui.shell.main_window import MainWindow  # noqa: E402

REAL = Path.home() / ".cache" / "specchat-test-models"


def settle(app: QApplication, seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()


def main() -> None:
    out = Path(sys.argv[1])
    if len(sys.argv) > 2:
        folder = Path(sys.argv[2])
    elif any(REAL.glob("*.gguf")):
        folder = REAL
    else:
        from app.testing.synthetic import make_model_set

        folder = make_model_set(Path(tempfile.mkdtemp())).target.parent
    save_settings(
        AppSettings(
            model_folders=[str(folder)], scan_hf_cache=False, threads=1, context_size=8192, kv_cache_type="q8_0"
        )
    )
    app = QApplication([])
    window = MainWindow(scan_on_start=True)
    window.resize(1000, 640)
    window.show()
    end = time.monotonic() + 30
    while not window.library_ready() and time.monotonic() < end:
        app.processEvents()
    window.library_ctl.open_library()
    library = window.library_ctl.library_dialog
    library.resize(980, 330)
    usable = window.library.usable_entries()
    library.select(max(usable, key=lambda e: e.file_size).path)
    for theme in ("dark", "light"):
        window.appearance.set_choice(theme)
        settle(app, 0.5)
        library.grab().save(str(out / f"library-memory-{theme}.png"))
        editor = window.model_actions.dialog_for(library.selected().path)
        editor.context_size.setValue(16384)
        editor.show()
        settle(app, 0.5)
        editor.grab().save(str(out / f"model-settings-{theme}.png"))
        editor.close()
    library.close()
    window.shutdown()


if __name__ == "__main__":
    main()
