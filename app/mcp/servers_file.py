"""The `mcp.json` list of tool servers, the format Claude Desktop, Cursor and LM Studio share:

    {"mcpServers": {"files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "."],
                              "env": {"KEY": "value"}},
                    "search": {"url": "http://127.0.0.1:8000/mcp", "headers": {"Authorization": "Bearer ..."}}}}

An entry that cannot be used gets a sentence and the others still load; a file that cannot be read at all is one
sentence. `"disabled": true` (LM Studio's and Cline's key) leaves an entry out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.common.bounded_read import FileReadError, read_text_bounded
from app.mcp.records import ServerSpec

# mcp.json is a few hundred bytes: a file far larger is not one, and is not read whole into memory.
MAX_FILE_BYTES = 1_000_000
# Each server is a process (or a connection) kept while the window or `generate` runs, and each of its tools a line
# of every prompt: more than this many is no setup a model can use. The rest of the file is said in a sentence.
MAX_SERVERS = 64


@dataclass(frozen=True)
class ServersFile:
    servers: tuple[ServerSpec, ...]
    problems: tuple[str, ...]  # one sentence per entry left out, or for the file


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


def _pairs(value: Any) -> bool:
    return isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())


def _entry(name: str, entry: Any) -> ServerSpec | str:
    """The server, or a sentence saying why it cannot be used."""
    where = f'Tool server "{name}"'
    if not isinstance(entry, dict):
        return f'{where} is not an object with a "command" or a "url".'
    command, url = entry.get("command"), entry.get("url") or entry.get("serverUrl")
    if command and url:
        return f'{where} has both a "command" and a "url": keep the one it uses.'
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            return f'{where}: "url" must be an http:// or https:// address.'
        headers = entry.get("headers", {})
        if not _pairs(headers):
            return f'{where}: "headers" must map names to text.'
        return ServerSpec(name=name, url=url, headers=tuple(sorted(headers.items())))
    if not isinstance(command, str) or not command.strip():
        return f'{where} has no "command" to start nor "url" to connect to.'
    args, env, cwd = entry.get("args", []), entry.get("env", {}), entry.get("cwd", "")
    if not _strings(args):
        return f'{where}: "args" must be a list of text.'
    if not _pairs(env):
        return f'{where}: "env" must map names to text.'
    if not isinstance(cwd, str):
        return f'{where}: "cwd" must be a folder\'s path.'
    return ServerSpec(name=name, command=command, args=tuple(args), env=tuple(sorted(env.items())), cwd=cwd)


def parse_servers(text: str, source: str = "mcp.json") -> ServersFile:
    try:
        data = json.loads(text)
    except ValueError as exc:
        return ServersFile((), (f"{source} is not valid JSON ({exc}).",))
    servers = data.get("mcpServers", data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        return ServersFile((), (f'{source} has no "mcpServers" object listing the tool servers.',))
    found: list[ServerSpec] = []
    problems: list[str] = []
    left_out = 0
    for name, entry in servers.items():
        if isinstance(entry, dict) and entry.get("disabled") is True:
            continue
        if len(found) + len(problems) >= MAX_SERVERS:
            left_out += 1
            continue
        spec = _entry(str(name), entry)
        if isinstance(spec, str):
            problems.append(spec)
        else:
            found.append(spec)
    if left_out:
        problems.append(
            f"{source} lists {left_out:,} more tool servers that were not loaded: at most {MAX_SERVERS} are started."
        )
    return ServersFile(tuple(found), tuple(problems))


def read_servers(path: Path) -> ServersFile:
    try:
        text = read_text_bounded(path, MAX_FILE_BYTES)
    except FileReadError as exc:
        return ServersFile((), (f"{exc}.",))
    return parse_servers(text, str(path))
