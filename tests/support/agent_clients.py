"""The coding agents people run, installed as they install them: from npm, into a cache folder of the tests' own.

A slow-tier test asks for a client by name; one on PATH is used as it is, else the pinned version is installed once
with npm (`npm install --prefix ~/.cache/specchat-<name>`), and the test is skipped with the reason when npm is
missing or cannot reach its registry. The versions are pinned so that a recorded fixture and the live client agree.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

INSTALL_DEADLINE_S = 600


@dataclass(frozen=True)
class AgentClient:
    command: str  # its name on PATH
    package: str  # npm's name, with the version the fixtures were recorded with
    folder: str  # its cache folder's name under ~/.cache

    @property
    def cache(self) -> Path:
        return Path.home() / ".cache" / self.folder

    @property
    def cached(self) -> Path:
        return self.cache / "node_modules" / ".bin" / self.command


CLAUDE_CODE = AgentClient("claude", "@anthropic-ai/claude-code@2.1.197", "specchat-claude-code")
CODEX = AgentClient("codex", "@openai/codex@0.171.0", "specchat-codex")


def installed(client: AgentClient) -> str:
    """The client's executable: on PATH, in its cache, or installed there now; else the test is skipped."""
    found = shutil.which(client.command)
    if found is not None:
        return found
    if client.cached.is_file():
        return str(client.cached)
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip(f"{client.command} is not installed and npm is missing to install {client.package}")
    client.cache.mkdir(parents=True, exist_ok=True)
    try:
        done = subprocess.run(
            [npm, "install", "--no-audit", "--no-fund", "--prefix", str(client.cache), client.package],
            capture_output=True,
            text=True,
            timeout=INSTALL_DEADLINE_S,
        )
    except subprocess.TimeoutExpired:
        pytest.skip(f"npm did not install {client.package} within {INSTALL_DEADLINE_S} s")
    if done.returncode != 0 or not client.cached.is_file():
        pytest.skip(f"npm could not install {client.package}: {done.stderr.strip()[-300:]}")
    return str(client.cached)
