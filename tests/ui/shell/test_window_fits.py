"""The window fits a laptop (issue 36). On a 1366x768 screen, an 800x600 one and 1366x768 at 2x scale (683x384
in Qt's units), the main window opens inside the screen's free area, and in it, in Settings and in the reply
inspector (and the Model library with a model's own settings) every control is inside the window, in the Tab order, and on top of no other widget.

Each screen is a process of its own (Qt picks its screen when it starts): tests/ui/run_layout_check.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

RUNNER = Path(__file__).resolve().parents[1] / "run_layout_check.py"


@pytest.mark.parametrize(
    "width, height, scale",
    [(1366, 768, 1), (800, 600, 1), (1366, 768, 2)],
    ids=["1366x768", "800x600", "1366x768 at 2x"],
)
@pytest.mark.slow
def test_every_control_fits_and_can_be_reached_by_keyboard(model_folder, fake_engine, width, height, scale):
    env = {**os.environ}
    env.pop("QT_QPA_PLATFORM", None)
    done = subprocess.run(
        [sys.executable, str(RUNNER), str(width), str(height), str(scale), str(model_folder), str(fake_engine.folder)],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["screen"] == [int(width / scale), int(height / scale)]
    for part in ("main window", "settings", "inspector", "library", "model settings"):
        assert report[part] == [], f"{part}: " + "\n".join(report[part])


def test_a_saved_size_larger_than_the_screen_is_clamped_on_reopening(make_window, fake_engine, qtbot):
    first = make_window(engine_factory=fake_engine)
    first.resize(3000, 2000)  # as saved on a bigger monitor
    first.move(-400, 900)
    first.shutdown()  # saves its geometry, as closing does
    first.close()
    again = make_window(engine_factory=fake_engine)
    screen = again.screen().availableGeometry()
    assert again.width() < 3000
    assert screen.contains(again.frameGeometry()), (again.frameGeometry(), screen)
