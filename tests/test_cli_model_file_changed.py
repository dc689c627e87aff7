"""A model file that changes under `specchat-cli generate` mid-reply (the real CLI, a subprocess): truncated, which
makes llama.cpp's next read of it raise SIGBUS, or rewritten in place; either way one sentence and exit status 1.
The CLI is paused (SIGSTOP) while the file changes, so the change always lands mid-reply."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_S = 120

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGBUS"), reason="no SIGBUS on this platform")


def _change_mid_reply(model: Path, change) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen([sys.executable, "-m", "app", "generate", "--target", str(model), "--prompt", "a b",
                                "--max-tokens", "2000", "--threads", "1"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, env=env, cwd=ROOT)
    try:
        first = process.stdout.read(1)  # the reply has started
        process.send_signal(signal.SIGSTOP)
        change(model)
        process.send_signal(signal.SIGCONT)
        out, err = process.communicate(timeout=DEADLINE_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert first
    return subprocess.CompletedProcess(process.args, process.returncode, first + out, err.decode())


def test_a_model_file_truncated_mid_reply_is_one_sentence_not_a_sigbus(tiny_models, tmp_path):
    model = tmp_path / "model.gguf"
    shutil.copy(tiny_models.target, model)
    done = _change_mid_reply(model, lambda path: os.truncate(path, 4096))
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: the model file {model} changed while it was in use (it shrank from {tiny_models.target.stat().st_size:,}"
        " to 4,096 bytes); the reply stopped")


def test_a_model_file_rewritten_mid_reply_is_said_after_the_reply(tiny_models, tmp_path):
    model = tmp_path / "model.gguf"
    shutil.copy(tiny_models.target, model)

    def touch(path: Path) -> None:
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))

    done = _change_mid_reply(model, touch)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: the model file {model} changed while it was in use (it was rewritten); the reply above may not be "
        "the model's")


def test_a_model_file_truncated_mid_bench_is_one_sentence_not_a_sigbus(tiny_models, tmp_path):
    """The bench reads the model for minutes: a truncation then ends it with the same sentence, not a SIGBUS."""
    model = tmp_path / "model.gguf"
    shutil.copy(tiny_models.target, model)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen([sys.executable, "-m", "app", "bench", "--target", str(model), "--modes", "plain",
                                "--only", "code-fix", "--repeats", "50", "--max-tokens", "256", "--threads", "1",
                                "--no-llama"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=ROOT)
    try:
        first = process.stderr.readline()  # its first progress line: the models are loaded and in use
        process.send_signal(signal.SIGSTOP)
        os.truncate(model, 4096)
        process.send_signal(signal.SIGCONT)
        out, err = process.communicate(timeout=DEADLINE_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert first, err
    assert process.returncode == 1, err.decode()[-2000:]
    assert err.decode().strip().splitlines()[-1] == (
        f"error: the model file {model} changed while it was in use (it shrank from {tiny_models.target.stat().st_size:,}"
        " to 4,096 bytes); the benchmark stopped")
