"""`generate --mcp`: the model calls tools from MCP servers, each call shown and allowed first, until it answers.

Nothing runs unseen. Before a call runs, the terminal shows the tool, its server and its arguments, and asks:
yes (once), always (this tool, for the rest of this run) or no. The tool is resolved once, when it is asked about,
and the call that runs is exactly that tool (app.replies.tool_loop.ToolGrants says what a grant is bound to). What
a tool server wrote (names, results, stderr) is shown through the one gate, app.common.text.printable. No sends
the model a refusal, and so does a call that cannot be asked about (no terminal) unless `--allow-tools` said yes to
all. Each result is shown in a line, with its time, and goes back to the model as a `tool` message; the loop ends
when a reply calls nothing or after `--max-steps` replies. The loop's rules (app.replies.tool_loop) are the window's too; this module asks on the
terminal and prints.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, TextIO

from app.cli.terminal import printable
from app.cli.tool_options import reply_calls
from app.mcp.records import ToolInfo, ToolResult, find_tool, no_such_tool, openai_tools
from app.mcp.servers_file import read_servers
from app.mcp.tool_host import ToolHost
from app.replies.tool_loop import (
    DEFAULT_MAX_STEPS,
    MAX_STEPS,
    REFUSED,
    ToolGrants,
    ToolRun,
    answered,
    arguments_object,
    call_messages,
    limit_sentence,
    pending_record,
)
from app.engine.tools.calls import ToolCall

__all__ = [
    "DEFAULT_MAX_STEPS",
    "MAX_STEPS",
    "REFUSED",
    "Permissions",
    "ToolSteps",
    "reply_until_answered",
    "run_call",
    "run_tool",
]
# How much of a result the terminal shows; the model gets all of it (up to the host's cap).
SHOWN_CHARS = 200


@dataclass
class Permissions(ToolGrants):
    """Who says yes: everything (`allow_all`), or the person at the terminal, call by call ("always": the tool, for
    the rest of the run)."""

    ask: Optional[Callable[[str], str]] = None  # shows a question, returns the answer typed; None: no terminal

    def asks(self, tool: ToolInfo, arguments: str, err: TextIO) -> bool:
        if self.allows(tool):
            return True
        if self.ask is None:
            err.write(
                f"[tool call {printable(tool.name, name=True)} refused: no terminal to ask; --allow-tools "
                "runs calls unasked]\n"
            )
            return False
        question = (
            f"\nThe model wants to run {printable(tool.tool, name=True)} (server "
            f'"{printable(tool.server, name=True)}") with {printable(arguments)}\n'
            "Run it? [y]es / [a]lways this tool / [N]o: "
        )
        try:
            answer = self.ask(question).strip().lower()
        except EOFError:
            answer = ""
        if answer in ("a", "always"):
            self.grant(tool)
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


def run_call(host: ToolHost, name: str, arguments: str, permissions: Permissions, err: TextIO) -> ToolResult:
    """One call, asked about first: the result to send the model (a refusal, where it was not allowed)."""
    return run_tool(host, find_tool(host.tools(), name), name, arguments, permissions, err)


def run_tool(
    host: ToolHost, tool: Optional[ToolInfo], name: str, arguments: str, permissions: Permissions, err: TextIO
) -> ToolResult:
    """The call of `name`, resolved to `tool` (None: no tool of that name is offered), asked about first; exactly
    that tool runs (a tool that changed or went away meanwhile does not)."""
    if tool is None:
        return no_such_tool(name)
    if not permissions.asks(tool, arguments, err):
        return ToolResult(REFUSED, is_error=True)
    future = host.call_tool(tool, arguments_object(arguments))
    try:
        result = future.result()
    except KeyboardInterrupt:
        future.cancel()
        raise
    shown = printable(result.text[:SHOWN_CHARS].replace("\n", " "))
    more = "…" if len(result.text) > SHOWN_CHARS else ""
    what = "failed" if result.is_error else "returned"
    err.write(f"[{printable(tool.tool, name=True)} {what} in {result.seconds:.1f}s: {shown}{more}]\n")
    return result


def servers_ready(host: ToolHost, err: TextIO, timeout_s: Optional[float]) -> bool:
    """Waits for the servers (None: until each has answered or been given up on) and says, on stderr, which are ready and which failed; False when none has a tool."""
    host.wait_started(timeout_s)
    for state in host.states():
        server = printable(state.spec.name, name=True)
        if state.phase == "ready":
            err.write(f'[tool server "{server}": {len(state.tools)} tools]\n')
        else:
            starting = f'tool server "{server}" is still starting'
            err.write(f"[{printable(state.problem) or starting}]\n")
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
        err.write(f"[{printable(problem)}]\n")
    host = ToolHost(servers.servers)
    host.start()
    return host


def tools_of(host: ToolHost, err: TextIO = sys.stderr) -> str:
    """The ready servers' tools for GenerationConfig.tools, once the servers have started. Raises NoToolsError."""
    if not servers_ready(host, err, None):
        raise NoToolsError("no tool server listed in the --mcp file could be used (see above)")
    return openai_tools(host.tools())


@dataclass
class ToolSteps:
    """The calls of one run and their results, as --json reports them, who allows them, and the loop's state."""

    permissions: Permissions = field(default_factory=lambda: terminal_permissions(False))
    tools_json: str = ""
    records: list[dict] = field(default_factory=list)
    run: ToolRun = field(default_factory=ToolRun)

    def run_calls(self, host: ToolHost, content: str, calls: list[ToolCall], err: TextIO) -> list:
        """Asks about and runs the calls of one reply; returns their records (app.store.tool_calls)."""
        done = []
        for call in calls:
            tool = find_tool(host.tools(), call.name)  # resolved once: asked about, run and recorded as this
            result = run_tool(host, tool, call.name, call.arguments, self.permissions, err)
            record = pending_record(call, tool)
            done.append(answered(record, "denied" if result.text == REFUSED else "once", result))
        self.run.note(done)
        self.records.append(
            {
                "content": content,
                "tool_calls": [record.openai() for record in done],
                "results": [
                    {"text": r.result, "is_error": r.is_error, "seconds": r.seconds, "truncated": r.truncated}
                    for r in done
                ],
            }
        )
        return done


# One reply as `generate` keeps it, its FinishedEvent (or None) first.
Kept = tuple[Any, ...]


def reply_until_answered(
    engine: Any,
    messages: list[dict],
    config: Any,
    host: ToolHost,
    steps: ToolSteps,
    stream: Callable[[Iterable[Any]], Kept],
    *,
    max_steps: int,
    quiet: bool,
) -> Kept:
    """Ask `engine` (a ChatEngine) to reply to `messages` until a reply calls no tool: each reply's calls are asked
    about, run through `host` and sent back with their results. `stream` prints one reply's events and keeps them;
    the last reply kept is returned. `quiet` (--json): no blank line between replies."""
    while True:
        kept = stream(engine.reply(messages, config))
        finished = kept[0]
        if finished is None or finished.stats.stop_reason != "eos" or not config.tools:
            return kept
        content, calls = reply_calls(finished.calls_text, engine.tool_format, config.tools)
        step = steps.run.next_step(calls)
        if step == "answer":
            return kept
        if not quiet:
            sys.stdout.write("\n")
        if step == "limit":
            print(f"[{limit_sentence(max_steps)} (--max-steps)]", file=sys.stderr)
            return kept
        if step == "repeated":
            # The results are in the conversation, so the next reply is asked without tools, to answer from them.
            print(
                "[the model asked again for calls it already made: asking it to answer from their results]",
                file=sys.stderr,
            )
            config = replace(config, tools="", tool_choice="")
            continue
        messages.extend(call_messages(content, steps.run_calls(host, content, calls, sys.stderr)))
