"""Child processes in tests: `specchat-cli` run as the tests run it, and Ctrl-C as a terminal sends it, with a
deadline, never leaving the child behind."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any


def interrupt(process: subprocess.Popen, timeout_s: float) -> bytes:
    """Send the process SIGINT and wait for it to end; its stderr. Killed if it is still running after that."""
    try:
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=timeout_s)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return err


def cli_child_pid(process: subprocess.Popen, timeout_s: float = 30) -> int:
    """The pid of the CLI itself under `python -m app`'s supervisor (app.engine.child_process.run_supervised): a
    signal that cannot be passed on (SIGSTOP) has to go to it."""
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        pids = children.read_text().split() if children.exists() else []
        if pids:
            return int(pids[0])
        if process.poll() is not None:
            break
        time.sleep(0.01)
    raise AssertionError("the supervised CLI process never started")


def engine_child_pid(cli_pid: int, timeout_s: float = 30, other_than: int | None = None) -> int:
    """The pid of `specchat-cli serve`'s engine process (a multiprocessing child of the CLI process `cli_pid`;
    its other child is multiprocessing's resource tracker), once one other than `other_than` runs."""
    children = Path(f"/proc/{cli_pid}/task/{cli_pid}/children")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for pid in children.read_text().split() if children.exists() else []:
            try:
                cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:
                continue
            if b"spawn_main" in cmdline and int(pid) != other_than:
                return int(pid)
        time.sleep(0.01)
    raise AssertionError("the engine process never started")


def is_running(pid: int) -> bool:
    """Whether `pid` is a live process (a zombie is not)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status


ROOT = Path(__file__).resolve().parents[2]


def cli_command(*args: object) -> list[str]:
    """The command line of `specchat-cli ARGS` as the tests start it: this Python, `-m app`. Bytes stay bytes (an
    argument that is no valid UTF-8); anything else becomes its text."""
    return [sys.executable, "-m", "app", *(a if isinstance(a, (str, bytes)) else str(a) for a in args)]


def run_cli(*args: object, timeout: float, **run_options: Any) -> subprocess.CompletedProcess:
    """Run `specchat-cli ARGS` from the project's root to its end (killed after `timeout` seconds), its output
    captured as text. `run_options` go to subprocess.run as they are (input, env, errors)."""
    options: dict[str, Any] = {"cwd": ROOT, "capture_output": True, "text": True, **run_options}
    return subprocess.run(cli_command(*args), timeout=timeout, **options)
