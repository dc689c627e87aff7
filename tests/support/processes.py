"""Child processes in tests: Ctrl-C as a terminal sends it, with a deadline, never leaving the child behind."""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path


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
