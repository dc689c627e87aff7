"""Fixtures for the window tests: a thread-leak check, a fake engine, and windows over the synthetic models."""

from __future__ import annotations

import gc
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QCoreApplication, QEvent
from PySide6.QtWidgets import QApplication

from app.store import AppSettings, save_settings
from tests.support.mcp_files import write_mcp_file
from tests.support.threads import no_thread_leaks  # noqa: F401 (autouse: every window test)
from app.ui.shell.qt_check import pyside_problem

_PYSIDE_PROBLEM = pyside_problem()
if _PYSIDE_PROBLEM:  # every window test would end in an interpreter abort; say why once instead
    pytest.exit(_PYSIDE_PROBLEM, returncode=3)
from tests.ui.fake_engine import FakeEngineControl  # noqa: E402


@pytest.fixture(autouse=True)
def no_blocking_confirmation(monkeypatch):
    """A destructive action's question is a modal dialog, which would block a test forever: a test that gets there
    without saying what the user answers (window.confirm) fails at once instead."""

    def refuse(parent, title, text, action):
        raise AssertionError(f"the window asked {title!r} ({text}); set window.confirm to answer it")

    monkeypatch.setattr("app.ui.shell.main_window.confirm_destructive", refuse)


@pytest.fixture(autouse=True)
def windows_are_deleted_by_qt(qapp):
    """Our widgets a test leaves open are closed and deleted by Qt at its teardown, before Python's collector.

    A window sits in reference cycles (its signals' lambdas), so a test's window left to the collector was
    destroyed in the middle of a later test's collection, its whole widget tree and their wrappers with it: a
    segfault in tests/ui/widgets/test_themes.py ("Garbage-collecting" in apply_style), in one .ci/run in seven, after
    tests/ui/shell/test_store_check.py left two of them.
    """
    yield
    leftovers = [w for w in QApplication.topLevelWidgets() if type(w).__module__.startswith("app.")]
    for widget in leftovers:
        shutdown = getattr(widget, "shutdown", None)
        if callable(shutdown):
            shutdown()
        widget.close()
        widget.deleteLater()
    if leftovers:
        QCoreApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        gc.collect()  # their wrappers, now that Qt has deleted what they wrapped


@pytest.fixture
def restore_light(qapp):
    """For theme tests: the test ends in the unstyled light look the other window tests expect, whatever it set."""
    from PySide6.QtGui import QPalette

    from app.ui.widgets import style
    from app.ui.widgets.themes import LIGHT

    sheet, palette = qapp.styleSheet(), QPalette(qapp.palette())
    yield
    style.apply_style(qapp, LIGHT)
    qapp.setStyleSheet(sheet)
    qapp.setPalette(palette)


@pytest.fixture
def model_folder(tiny_models, tmp_path) -> Path:
    """A folder with the synthetic models: target, drafts (compatible and not) and broken files."""
    folder = tmp_path / "models"
    folder.mkdir()
    for path in tiny_models.__dict__.values():
        if isinstance(path, Path) and path.is_file():
            shutil.copy2(path, folder / path.name)
    return folder


@pytest.fixture
def fake_engine(tmp_path) -> FakeEngineControl:
    """The scripted engine's controls: pass it as `engine_factory`; set its knobs at any time in the test."""
    return FakeEngineControl(tmp_path / "fake-engine")


@pytest.fixture
def make_window(qtbot, model_folder):
    """Build a MainWindow over `model_folder`; the window and its threads are closed at the end of the test."""
    from app.ui.shell.main_window import MainWindow

    windows = []

    def make(engine_factory=None, folders=None, scan_hf_cache=False, wait_scan=True, **settings_changes):
        options = {"threads": 1, "context_size": 2048, **settings_changes}
        settings = AppSettings(
            model_folders=[str(model_folder)] if folders is None else folders, scan_hf_cache=scan_hf_cache, **options
        )
        save_settings(settings)
        window = MainWindow(engine_factory=engine_factory)
        qtbot.addWidget(window)
        windows.append(window)
        window.show()
        if wait_scan:
            qtbot.waitUntil(window.library_ready, timeout=10000)
        return window

    yield make
    for window in windows:
        window.shutdown()


@pytest.fixture
def mcp_window(make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path):
    """A window over the scripted engine whose mcp.json lists the test tool server as "notes", its server ready and
    the tiny target loaded. Its chats offer no tools until one turns them on."""
    from tests.ui.window_helpers import choose_pair

    mcp = write_mcp_file(tmp_path / "mcp.json")
    window = make_window(engine_factory=fake_engine, mcp_file=str(mcp))
    qtbot.waitUntil(lambda: bool(window.tools.servers.tools()), timeout=60000)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    return window
