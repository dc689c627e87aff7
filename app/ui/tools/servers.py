"""The window's tool servers: the mcp.json chosen in Settings, its servers kept connected on the ToolHost's thread.

The servers run in the window's process, on the host's own thread (never the GUI thread); llama.cpp stays in the
engine process. A server's change of state (starting, ready with its tools, failed with its sentence) reaches the
GUI thread as sig_changed. GUI thread only, except the host's callback, which only emits the signal.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import Any, Optional

from PySide6.QtCore import QObject, Signal

from app.mcp.records import ServerState, ToolInfo, ToolResult, openai_tools, same_tool
from app.mcp.servers_file import read_servers
from app.mcp.tool_host import ToolHost
from app.store import ChatSettings


class ToolServers(QObject):
    """The servers of one mcp.json (none until a file is chosen)."""

    sig_changed = Signal()
    """A server started, failed or stopped, or another file was chosen."""

    def __init__(self, parent: Optional[QObject] = None, call_timeout_s: Optional[float] = None):
        super().__init__(parent)
        self._host: Optional[ToolHost] = None
        self._call_timeout_s = call_timeout_s
        self.path = ""
        self.problems: tuple[str, ...] = ()  # entries of the file left out, or the file itself, in sentences

    def use_file(self, path: str) -> None:
        """Connect the servers `path` lists (none for ""); the previous file's servers are stopped."""
        if path == self.path and self._host is not None:
            return
        self.close()
        self.path = path
        self.problems = ()
        if path:
            servers = read_servers(Path(path))
            self.problems = servers.problems
            if servers.servers:
                kwargs: dict[str, Any] = {}
                if self._call_timeout_s is not None:
                    kwargs["call_timeout_s"] = self._call_timeout_s
                self._host = ToolHost(servers.servers, on_change=self.sig_changed.emit, **kwargs)
                self._host.start()
        self.sig_changed.emit()

    def states(self) -> tuple[ServerState, ...]:
        return self._host.states() if self._host is not None else ()

    def tools(self) -> tuple[ToolInfo, ...]:
        """Every ready server's tools, named as the model sees them."""
        return self._host.tools() if self._host is not None else ()

    def chat_tools(self, settings: ChatSettings) -> tuple[ToolInfo, ...]:
        """The tools a chat offers: none where the chat does not use tools, else every ready one but those switched
        off for it."""
        if not settings.tools:
            return ()
        off = set(settings.tools_off)
        return tuple(tool for tool in self.tools() if tool.name not in off)

    def tools_json(self, settings: ChatSettings) -> str:
        """The chat's tools as GenerationConfig.tools wants them ("" for none)."""
        return openai_tools(self.chat_tools(settings))

    def current(self, tool: ToolInfo) -> Optional[ToolInfo]:
        """`tool` as its server offers it now, when unchanged (None: it changed, or its server is gone)."""
        return same_tool(self.tools(), tool)

    def call_tool(self, tool: ToolInfo, arguments: dict) -> concurrent.futures.Future:
        """Runs exactly `tool` on the host's thread (nothing runs where it changed or went away); the Future gives
        a ToolResult (cancel it to stop the call)."""
        if self._host is None:
            future: concurrent.futures.Future = concurrent.futures.Future()
            future.set_result(ToolResult("No tool servers are connected.", is_error=True))
            return future
        return self._host.call_tool(tool, arguments)

    def close(self) -> None:
        """Stop every server (their processes end); safe twice."""
        host, self._host = self._host, None
        if host is not None:
            host.close()
