"""One window per chat history: a second launch brings the first window forward and exits; SIGTERM and SIGINT
close the window the way its close button does."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.platform import paths
from app.ui.shell.single_instance import InstanceServer, ask_running_instance, server_name

REPO_ROOT = Path(__file__).resolve().parents[3]


def test_a_second_launch_asks_the_first_to_come_forward(qtbot, tmp_path):
    name = server_name(tmp_path)
    assert not ask_running_instance(name)
    first = InstanceServer(name)
    try:
        assert first.is_listening()
        with qtbot.waitSignal(first.sig_activate, timeout=10000):
            assert ask_running_instance(name)
    finally:
        first.close()


def test_each_user_data_folder_has_its_own_instance(tmp_path):
    assert server_name(tmp_path / "a") != server_name(tmp_path / "b")
    assert server_name(tmp_path / "a") == server_name(tmp_path / "a")


def test_a_socket_left_by_a_crashed_instance_does_not_block_the_next(qtbot, tmp_path):
    name = server_name(tmp_path)
    crashed = InstanceServer(name)
    crashed.close()  # on Unix a killed process leaves its socket file; a closed server is the nearest stand-in
    again = InstanceServer(name)
    try:
        assert again.is_listening()
    finally:
        again.close()


def start_app() -> subprocess.Popen:
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    return subprocess.Popen(
        [sys.executable, "-m", "app.ui.shell.main"],
        cwd=REPO_ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_until_running(process: subprocess.Popen) -> None:
    name = server_name(paths.user_data_dir())
    deadline = time.monotonic() + 120
    while not ask_running_instance(name, timeout_ms=200):
        if process.poll() is not None:
            pytest.fail(f"the app exited early ({process.returncode}): {process.communicate()[1]}")
        assert time.monotonic() < deadline, "the app never started listening"
        time.sleep(0.2)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_second_launch_exits_and_sigterm_closes_the_first_cleanly(qapp):
    first = start_app()
    try:
        wait_until_running(first)
        second = subprocess.run(
            [sys.executable, "-m", "app.ui.shell.main"],
            cwd=REPO_ROOT,
            env=dict(os.environ, QT_QPA_PLATFORM="offscreen"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert second.returncode == 0
        assert "already running" in second.stderr
        _assert_closes_cleanly(first, signal.SIGTERM)
    finally:
        _end(first)


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_ctrl_c_closes_the_window_cleanly(qapp):
    first = start_app()
    try:
        wait_until_running(first)
        _assert_closes_cleanly(first, signal.SIGINT)
    finally:
        _end(first)


def _assert_closes_cleanly(app, signum) -> None:
    """The signal closes the window as its close button does: exit code 0, no traceback."""
    app.send_signal(signum)
    assert app.wait(timeout=60) == 0
    assert "Traceback" not in app.communicate()[1]


def _end(app) -> None:
    if app.poll() is None:
        app.kill()
        app.wait()
