"""A real MCP tool server for the tests, over stdio, written with the `mcp` package's MCPServer.

    python -m tests.tool_servers.tool_server [--garbage] [--die-at-start]

--garbage prints a line that is not JSON-RPC before serving; --die-at-start writes a sentence to stderr and exits.
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

if "--die-at-start" in sys.argv:
    print("tool_server: cannot open the database (permission denied)", file=sys.stderr)
    raise SystemExit(3)

server = MCPServer("test-tools")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


@server.tool()
def read_note(name: str) -> str:
    """Read a note by its name."""
    return f"Note {name}: buy milk"


@server.tool()
def slow(seconds: float) -> str:
    """Wait, then say so."""
    time.sleep(seconds)
    return "done waiting"


@server.tool()
def huge() -> str:
    """Return ten megabytes of text."""
    return "x" * 10_000_000


@server.tool()
def fails() -> str:
    """Always fails, saying why (a ToolError's message reaches the client; other errors' do not)."""
    raise ToolError("the disk is full")


@server.tool()
def crash() -> str:
    """End the server's process."""
    os._exit(1)


if __name__ == "__main__":
    if "--garbage" in sys.argv:
        sys.stdout.write("this is not JSON-RPC\n")
        sys.stdout.flush()
    server.run("stdio")
