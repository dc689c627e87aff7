"""`generate --mcp`: the model calls tools from MCP servers, each call shown and allowed first, until it answers.

Nothing runs unseen. Before a call runs, the terminal shows the tool, its server and its arguments, and asks:
yes (once), always (this tool, for the rest of this run) or no. No sends the model a refusal, and so does a call
that cannot be asked about (no terminal) unless `--allow-tools` said yes to all. Each result is shown in a line,
with its time, and goes back to the model as a `tool` message; the loop ends when a reply calls nothing or after
`--max-steps` replies.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional, TextIO

from app.cli.terminal import printable
from app.mcp.records import ToolInfo, ToolResult, find_tool, openai_tools
from app.mcp.servers_file import read_servers
from app.mcp.tool_host import CONNECT_TIMEOUT_S, ToolHost

DEFAULT_MAX_STEPS = 8
MAX_STEPS = 64
REFUSED = "The user did not allow this call. Answer without it, or ask the user."
# How much of a result the terminal shows; the model gets all of it (up to the host's cap).
SHOWN_CHARS = 200


@dataclass
class Permissions:
    """Who says yes: everything (`allow_all`), or the person at the terminal, call by call."""

    allow_all: bool = False
    ask: Optional[Callable[[str], str]] = None  # shows a question, returns the answer typed; None: no terminal
    always: set[str] = field(default_factory=set)  # tools allowed for the rest of the run

    def allows(self, tool: ToolInfo, arguments: str, err: TextIO) -> bool:
        if self.allow_all or tool.name in self.always:
            return True
        if self.ask is None:
            err.write(f"[tool call {tool.name} refused: no terminal to ask; --allow-tools runs calls unasked]\n")
            return False
        question = (f"\nThe model wants to run {tool.tool} (server \"{tool.server}\") with {printable(arguments)}\n"
                    "Run it? [y]es / [a]lways this tool / [N]o: ")
        try:
            answer = self.ask(question).strip().lower()
        except EOFError:
            answer = ""
        if answer in ("a", "always"):
            self.always.add(tool.name)
            return True
        return answer in ("y", "yes")


def terminal_permissions(allow_all: bool) -> Permissions:
    """Asks on the terminal when there is one: stdin for answers, stderr for the question (stdout is the reply)."""
    def ask(question: str) -> str:
        sys.stderr.write(question)
        sys.stderr.flush()
        line = sys.stdin.readline()
        if not line:
            raise EOFError
        return line

    return Permissions(allow_all=allow_all, ask=ask if sys.stdin.isatty() else None)


def _arguments(text: str) -> dict:
    """The call's arguments as the server wants them: a JSON object (a model that wrote none gets {})."""
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def run_call(host: ToolHost, name: str, arguments: str, permissions: Permissions, err: TextIO) -> ToolResult:
    """One call, asked about first: the result to send the model (a refusal, where it was not allowed)."""
    tool = find_tool(host.tools(), name)
    if tool is None:
        return ToolResult(f"There is no tool named {name!r}.", is_error=True)
    if not permissions.allows(tool, arguments, err):
        return ToolResult(REFUSED, is_error=True)
    future = host.call(name, _arguments(arguments))
    try:
        result = future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise
    shown = printable(result.text[:SHOWN_CHARS].replace("\n", " "))
    more = "…" if len(result.text) > SHOWN_CHARS else ""
    what = "failed" if result.is_error else "returned"
    err.write(f"[{tool.tool} {what} in {result.seconds:.1f}s: {shown}{more}]\n")
    return result


def call_messages(content: str, calls: list[dict], results: list[ToolResult]) -> list[dict]:
    """The assistant's turn with its calls and one `tool` message per call with its result. The calls are in
    OpenAI's shape except that `arguments` is the object, not its JSON text: templates write `arguments | tojson`
    (as app.serve.tool_requests hands them over too), and a string there would be written quoted."""
    template_calls = [{**call, "function": {**call["function"], "arguments": _arguments(call["function"]["arguments"])}}
                      for call in calls]
    turn: list[dict] = [{"role": "assistant", "content": content, "tool_calls": template_calls}]
    for call, result in zip(calls, results):
        turn.append({"role": "tool", "tool_call_id": call["id"], "name": call["function"]["name"],
                     "content": result.text})
    return turn


def servers_ready(host: ToolHost, err: TextIO, timeout_s: float) -> bool:
    """Waits for the servers and says, on stderr, which are ready and which failed; False when none has a tool."""
    host.wait_started(timeout_s)
    for state in host.states():
        if state.phase == "ready":
            err.write(f"[tool server \"{state.spec.name}\": {len(state.tools)} tools]\n")
        else:
            err.write(f"[{state.problem or f'tool server {state.spec.name!r} is still starting'}]\n")
    return bool(host.tools())


class NoToolsError(Exception):
    """--mcp was given, and no server listed there has a tool to offer (each one's sentence was printed)."""


def mcp_problem(args: argparse.Namespace) -> Optional[str]:
    """What is wrong with --mcp and its options, before anything starts; None when nothing is."""
    if not args.mcp:
        return "--allow-tools and --max-steps go with --mcp" if args.allow_tools else None
    if args.chat is None:
        return "--mcp needs --chat: tools go to the model's chat template"
    if args.tools:
        return "--mcp offers its servers' tools: leave out --tools"
    if not 1 <= args.max_steps <= MAX_STEPS:
        return f"--max-steps must be from 1 to {MAX_STEPS}"
    servers = read_servers(Path(args.mcp))
    if not servers.servers:
        return f"--mcp {args.mcp}: " + (" ".join(servers.problems) or "it lists no tool servers")
    return None


def start_tool_host(path: str, err: TextIO = sys.stderr) -> "ToolHost":
    """The servers of `path`, started (they connect while the model loads); entries left out are said on `err`."""
    servers = read_servers(Path(path))
    for problem in servers.problems:
        err.write(f"[{problem}]\n")
    host = ToolHost(servers.servers)
    host.start()
    return host


def tools_of(host: ToolHost, err: TextIO = sys.stderr) -> str:
    """The ready servers' tools for GenerationConfig.tools, once the servers have started. Raises NoToolsError."""
    if not servers_ready(host, err, CONNECT_TIMEOUT_S):
        raise NoToolsError("no tool server listed in the --mcp file could be used (see above)")
    return openai_tools(host.tools())


@dataclass
class ToolSteps:
    """The calls of one run and their results, as --json reports them, and who allows them."""

    permissions: Permissions = field(default_factory=lambda: terminal_permissions(False))
    tools_json: str = ""
    records: list[dict] = field(default_factory=list)

    def all_repeated(self, calls) -> bool:
        """Whether every call (ToolCalls) was already made in this run, with the same arguments."""
        made = {(c["function"]["name"], json.dumps(_arguments(c["function"]["arguments"]), sort_keys=True))
                for record in self.records for c in record["tool_calls"]}
        return all((c.name, json.dumps(_arguments(c.arguments), sort_keys=True)) in made for c in calls)

    def note(self, content: str, calls: list[dict], results: list[ToolResult]) -> None:
        self.records.append({"content": content, "tool_calls": calls,
                             "results": [{"text": r.text, "is_error": r.is_error, "seconds": round(r.seconds, 3),
                                          "truncated": r.truncated} for r in results]})
