"""Files a person names are read with bounds (app.common.bounded_read): a device (/dev/zero, /dev/urandom), a FIFO
or a folder given as the MCP file, the tools or schema file, the prompt file, an attachment or the API key file is
one sentence and exit 2 from the real CLI, never a read until memory runs out, nor an open that waits forever."""

from __future__ import annotations

import os
import resource
import subprocess
from pathlib import Path

import pytest

from app.common.bounded_read import FileReadError, read_bounded, read_text_bounded
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[1]
DEADLINE_S = 120  # a run past this waits on the FIFO: the test fails
# The CLI's memory is capped, so a device read without bounds fails the test (MemoryError) instead of the machine.
MEMORY_CAP = 4 << 30


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))


def _generate(*args) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "SPECCHAT_API_KEY"}
    env["PYTHONPATH"] = str(ROOT)
    return run_cli("generate", *args, errors="replace", timeout=DEADLINE_S, env=env, preexec_fn=_capped)


@pytest.fixture
def fifo(tmp_path) -> Path:
    path = tmp_path / "pipe.json"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize(
    "option,kind",
    [
        ("--mcp", "/dev/zero"),
        ("--mcp", "/dev/urandom"),
        ("--mcp", "fifo"),
        ("--mcp", "folder"),
        ("--tools", "/dev/zero"),
        ("--json-schema", "fifo"),
        ("--prompt-file", "/dev/urandom"),
        ("--attach", "fifo"),
        ("--attach", "/dev/zero"),
        ("--api-key-file", "fifo"),
    ],
)
def test_a_device_a_fifo_or_a_folder_is_one_sentence(tiny_models, tmp_path, fifo, option, kind):
    path = {"fifo": fifo, "folder": tmp_path}.get(kind, kind)
    where = (
        ["--server", "http://127.0.0.1:9", "--model", "m"]
        if option == "--api-key-file"
        else ["--target", tiny_models.target]
    )
    chat = [] if option == "--prompt-file" else ["--chat", "hi"]
    done = _generate(*where, *chat, option, path)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "Traceback" not in done.stderr and str(path) in lines[0]
    said = {"fifo": "is a pipe (FIFO), not a regular file", "folder": "is a folder, not a file"}
    assert said.get(kind, "is a device, not a regular file") in lines[0] or (
        option == "--attach" and "is not a file; only files can be attached" in lines[0]
    )


def test_the_reader_refuses_what_is_no_regular_file_and_what_is_too_large(tmp_path, fifo):
    with pytest.raises(FileReadError, match="is a device"):
        read_bounded("/dev/zero", 1000)
    with pytest.raises(FileReadError, match="FIFO"):
        read_bounded(fifo, 1000)
    with pytest.raises(FileReadError, match="does not exist"):
        read_bounded(tmp_path / "absent", 1000)
    big = tmp_path / "big.json"
    big.write_bytes(b"x" * 1001)
    with pytest.raises(FileReadError, match="is larger than 1.0 KB"):
        read_bounded(big, 1000)
    assert read_bounded(big, 1001) == b"x" * 1001
    (tmp_path / "bad.txt").write_bytes(b"ok \xff")
    with pytest.raises(FileReadError, match="not valid UTF-8"):
        read_text_bounded(tmp_path / "bad.txt", 1000)
