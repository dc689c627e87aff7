"""A model file that changes under `specchat-cli generate` mid-reply (the real CLI, a subprocess): truncated, which
makes llama.cpp's next read of it raise SIGBUS, or rewritten in place; either way one sentence and exit status 1.
The CLI is paused (SIGSTOP) while the file changes, so the change always lands mid-reply."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import cli_child_pid, cli_command

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 120

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGBUS"), reason="no SIGBUS on this platform")


def _change_mid_run(
    model: Path, change, args: tuple[str, ...] = ("generate", "--prompt", "a b", "--max-tokens", "2000")
) -> subprocess.CompletedProcess:
    """Run the CLI command `args` on `model`, and `change` the file once the run has started (its first byte on
    stdout or stderr: a reply's first token, the bench's first progress line)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    process = subprocess.Popen(
        cli_command(*args, "--target", str(model), "--threads", "1"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    started = process.stdout if args[0] == "generate" else process.stderr
    try:
        first = started.read(1)
        cli = cli_child_pid(process)
        os.kill(cli, signal.SIGSTOP)
        change(model)
        os.kill(cli, signal.SIGCONT)
        out, err = process.communicate(timeout=DEADLINE_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert first
    if started is process.stdout:
        out = first + out
    else:
        err = first + err
    return subprocess.CompletedProcess(process.args, process.returncode, out, err.decode())


def test_a_model_file_truncated_mid_reply_is_one_sentence_not_a_sigbus(tiny_models, tmp_path):
    model = tmp_path / "model.gguf"
    shutil.copy(tiny_models.target, model)
    done = _change_mid_run(model, lambda path: os.truncate(path, 4096))
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: the model file {model} changed while it was in use (it shrank from {tiny_models.target.stat().st_size:,}"
        " to 4,096 bytes); the reply stopped"
    )


@pytest.mark.slow
def test_a_model_file_rewritten_mid_reply_is_said_after_the_reply(tiny_models, tmp_path):
    model = tmp_path / "model.gguf"
    shutil.copy(tiny_models.target, model)

    def touch(path: Path) -> None:
        stat = path.stat()
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))

    done = _change_mid_run(model, touch)
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: the model file {model} changed while it was in use (it was rewritten); the reply above may not be "
        "the model's"
    )


def test_a_model_file_truncated_mid_bench_is_one_sentence_not_a_sigbus(tiny_models, tmp_path):
    """The bench reads the model for minutes: a truncation then ends it with the same sentence, not a SIGBUS."""
    model = tmp_path / "model.gguf"
    shutil.copy(tiny_models.target, model)
    done = _change_mid_run(
        model,
        lambda path: os.truncate(path, 4096),
        ("bench", "--modes", "plain", "--only", "code-fix", "--repeats", "50", "--max-tokens", "256", "--no-llama"),
    )
    assert done.returncode == 1, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        f"error: the model file {model} changed while it was in use (it shrank from {tiny_models.target.stat().st_size:,}"
        " to 4,096 bytes); the benchmark stopped"
    )
