"""mcp.json files that list the test tool server (tests/tool_servers/tool_server.py), for the window's tests."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The test tool server, started as a client of an mcp.json starts it.
TOOL_SERVER = {"command": sys.executable, "args": ["-m", "tests.tool_servers.tool_server"], "cwd": str(ROOT)}


def write_mcp_file(path: Path, names: tuple[str, ...] = ("notes",)) -> Path:
    """An mcp.json at `path` listing the test tool server under each of `names`; returns the path."""
    path.write_text(json.dumps({"mcpServers": {name: TOOL_SERVER for name in names}}))
    return path
