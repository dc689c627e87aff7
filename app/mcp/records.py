"""A tool server's state, its tools and a call's result: what the window, the CLI and tests are told."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

ServerPhase = Literal["starting", "ready", "failed", "stopped"]


@dataclass(frozen=True)
class ServerSpec:
    """One entry of mcp.json: a command to start (stdio) or the URL of a Streamable HTTP server."""

    name: str
    command: str = ""
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()
    cwd: str = ""
    url: str = ""
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def transport(self) -> str:
        return "http" if self.url else "stdio"

    def describe(self) -> str:
        """What runs, in a line, e.g. "npx -y @modelcontextprotocol/server-filesystem ~/src" or the URL."""
        return self.url or " ".join((self.command, *self.args))


@dataclass(frozen=True)
class ToolInfo:
    """A tool a server offers: `name` as the model sees it (unique over all servers), `tool` as the server knows it."""

    server: str
    name: str
    tool: str
    description: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)

    @property
    def grant_key(self) -> str:
        """What an "always allow" is bound to: this server, the tool as the server knows it, and a hash of what it
        says it is (its description and input schema). A grant so never follows a name to another server's tool,
        and a tool that changed is asked about again."""
        said = json.dumps([self.description, self.input_schema], sort_keys=True, ensure_ascii=True, default=str)
        return json.dumps([self.server, self.tool, hashlib.sha256(said.encode()).hexdigest()[:16]])

    def as_openai(self) -> dict[str, Any]:
        """The tool in OpenAI's `tools` shape, which the chat templates render."""
        schema = self.input_schema or {"type": "object", "properties": {}}
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": schema},
        }


@dataclass(frozen=True)
class ServerState:
    spec: ServerSpec
    phase: ServerPhase
    tools: tuple[ToolInfo, ...] = ()
    problem: str = ""  # a sentence for a person, when phase is "failed"


@dataclass(frozen=True)
class ToolResult:
    """What a call returned, as the text the model is sent. `is_error`: the tool (or the host) reports a failure,
    described in `text`; `truncated`: the result was longer than a reply can use and was cut."""

    text: str
    is_error: bool = False
    seconds: float = 0.0
    truncated: bool = False


def openai_tools(tools: tuple[ToolInfo, ...] | list[ToolInfo]) -> str:
    """The JSON text of OpenAI's `tools` list for these tools ("" for none): GenerationConfig.tools's form."""
    return json.dumps([tool.as_openai() for tool in tools]) if tools else ""


def find_tool(tools: tuple[ToolInfo, ...] | list[ToolInfo], name: str) -> Optional[ToolInfo]:
    return next((tool for tool in tools if tool.name == name), None)


def same_tool(tools: tuple[ToolInfo, ...] | list[ToolInfo], tool: ToolInfo) -> Optional[ToolInfo]:
    """`tool` as `tools` list it now, when its server still offers it unchanged (None: changed or gone)."""
    return next((t for t in tools if t.grant_key == tool.grant_key), None)


def tool_changed(tool: ToolInfo) -> ToolResult:
    """What the model is told when the tool a person allowed changed or went away before it ran: nothing ran."""
    return ToolResult(
        f'The tool {tool.tool} of the server "{tool.server}" changed or went away after it was '
        "allowed, so it did not run.",
        is_error=True,
    )


def no_such_tool(name: str) -> ToolResult:
    """What the model is told when it calls a tool nobody offered it (the host, the CLI and the window alike)."""
    return ToolResult(f"There is no tool named {name!r}.", is_error=True)
