"""llama.cpp's llama-mtmd-cli as the reference for what a vision model says about a picture (absent: skip)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Sequence

import pytest

from tests.remote.llama_tools import TOOLS_BIN

MARKER = "<__media__>"  # mtmd's default media marker: where each picture goes in the prompt


def mtmd_cli() -> Path:
    path = TOOLS_BIN / "llama-mtmd-cli"
    if not path.is_file():
        pytest.skip("llama-mtmd-cli is not built (../shared/tools/build-llama-reference.sh)")
    return path


def mtmd_cli_reply(model: Path, mmproj: Path, images: Sequence[Path], prompt: str, n_predict: int) -> str:
    """The greedy reply of llama-mtmd-cli to one user message (`prompt` holds a MARKER per image, in order), at
    least `n_predict` tokens of it: compare a reply of n_predict tokens as its prefix (reply_matches).

    The tool prints its reply through llama.cpp's log thread, which on a busy machine sometimes exits before the
    last pieces are written; so it is asked for EXTRA tokens more, and run again (up to three times) when what came
    back is shorter than the longest run's."""
    replies = []
    for _ in range(3):
        replies.append(_run(model, mmproj, images, prompt, n_predict + EXTRA))
        if len(replies) > 1 and replies[-1] == replies[-2]:
            break
    return max(replies, key=len)


EXTRA = 16


def reply_matches(ours: str, reference: str) -> bool:
    """Whether our reply (n_predict tokens) is the start of llama-mtmd-cli's (n_predict + EXTRA)."""
    ours = ours.rstrip("\n")
    return bool(ours) and reference.startswith(ours)


def _run(model: Path, mmproj: Path, images: Sequence[Path], prompt: str, n_predict: int) -> str:
    args = [
        mtmd_cli(),
        "-m",
        model,
        "--mmproj",
        mmproj,
        "-p",
        prompt,
        "--temp",
        "0",
        "-n",
        n_predict,
        "-t",
        "1",
        "-c",
        "2048",
        "--seed",
        "0",
    ]
    for image in images:
        args += ["--image", image]
    result = subprocess.run(
        [str(a) for a in args], capture_output=True, timeout=120, env=dict(os.environ, LD_LIBRARY_PATH=str(TOOLS_BIN))
    )
    assert result.returncode == 0, result.stderr.decode(errors="replace")[-2000:]
    # The tool prints a newline once the prompt is read, then the reply's pieces, then a blank line or two.
    out = result.stdout.decode()
    assert out.startswith("\n"), out
    return out[1:].rstrip("\n")
