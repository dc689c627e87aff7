"""`specchat-cli` runs the command in a child process it watches, so a llama.cpp build that cannot run on this CPU
(SIGILL, AMX in a virtual machine) gets a sentence instead of an exit status 132 with nothing printed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from app.engine.child_process import is_build_fault
from tests.support.processes import cli_child_pid, cli_command

ROOT = Path(__file__).resolve().parents[2]


def _supervise(code: str) -> subprocess.CompletedProcess:
    runner = (
        "import sys; from app.engine.child_process import run_supervised; "
        f"raise SystemExit(run_supervised([sys.executable, '-c', {code!r}]))"
    )
    return subprocess.run([sys.executable, "-c", runner], cwd=ROOT, capture_output=True, text=True, timeout=60)


def test_a_sigill_gets_the_rebuild_sentence_and_the_same_status():
    done = _supervise("import os, signal; os.kill(os.getpid(), signal.SIGILL)")
    assert is_build_fault(done.returncode)
    assert "illegal instruction (SIGILL)" in done.stderr
    assert "packaging/install.py --rebuild" in done.stderr
    assert "not the model file" in done.stderr


def test_other_ends_pass_through_unchanged():
    assert _supervise("raise SystemExit(3)").returncode == 3
    crashed = _supervise("import os; os.abort()")
    assert crashed.returncode == -signal.SIGABRT and "SIGILL" not in crashed.stderr


def test_a_sigkill_gets_the_memory_sentence_and_status_137():
    # The OOM killer's SIGKILL: the supervisor cannot re-raise it on itself (it used to print a traceback).
    done = _supervise("import os, signal; os.kill(os.getpid(), signal.SIGKILL)")
    assert done.returncode == 137
    assert done.stderr == ("specchat-cli: the process was killed by SIGKILL, often the system running out of memory.\n")


def _generating(tiny_models) -> subprocess.Popen:
    """`specchat-cli generate` with a long reply on the tiny model, as a person runs it."""
    return subprocess.Popen(
        cli_command(
            "generate",
            "--target",
            str(tiny_models.target),
            "--chat",
            "the cat",
            "--max-tokens",
            "1500",
            "--threads",
            "1",
        ),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_generate_killed_mid_reply_says_so(tiny_models, signum):
    process = _generating(tiny_models)
    try:
        assert process.stdout.read(1)  # the reply has begun
        os.kill(cli_child_pid(process), signum)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    last = err.strip().splitlines()[-1]
    if signum == signal.SIGKILL:
        assert process.returncode == 137
        assert last == "specchat-cli: the process was killed by SIGKILL, often the system running out of memory."
    else:
        assert process.returncode == -signal.SIGSEGV
        assert last.startswith(
            "specchat-cli: the process was killed by SIGSEGV: llama.cpp (or a library under it) crashed"
        )


def test_the_cli_runs_supervised_and_a_signal_to_it_reaches_the_command(tmp_path):
    # SIGTERM to the process a script started reaches the command inside; nothing is left behind.
    process = subprocess.Popen(
        cli_command("serve", "--help"),
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, _ = process.communicate(timeout=60)
    assert process.returncode == 0 and "usage" in out.lower()
    sleeper = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time; from app.engine.child_process import run_supervised; "
            "raise SystemExit(run_supervised([sys.executable, '-c', 'import time; print(1, flush=True); time.sleep(60)']))",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert sleeper.stdout.readline().strip() == "1"
        os.kill(sleeper.pid, signal.SIGTERM)
        assert sleeper.wait(timeout=30) == -signal.SIGTERM
    finally:
        if sleeper.poll() is None:
            sleeper.kill()
