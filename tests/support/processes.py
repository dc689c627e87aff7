"""Child processes in tests: Ctrl-C as a terminal sends it, with a deadline, never leaving the child behind."""

from __future__ import annotations

import signal
import subprocess


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
