"""Tool servers, connected on a thread of their own through the official `mcp` SDK.

The SDK is asynchronous; the window's and the CLI's threads are not. A ToolHost runs one asyncio loop on a daemon
thread named "SpecChat MCP tools", keeps each server connected in a task of that loop, and hands callers plain records
and concurrent Futures. A server that cannot start, crashes, hangs or floods gets a sentence, and the others go on.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import json
import re
import threading
import time
from typing import Any, Callable, Optional, Sequence

from app.mcp.process_group import ProcessGroup
from app.mcp.records import (
    ServerSpec,
    ServerState,
    ToolInfo,
    ToolResult,
    find_tool,
    no_such_tool,
    same_tool,
    tool_changed,
)
from app.mcp.server_log import StderrTail, server_log, serving

# The most text of one result that reaches the model: a 10 MB file read by a tool would fill any context, and a
# person could not review it. The rest is cut and the model is told so.
MAX_RESULT_CHARS = 100_000
CONNECT_TIMEOUT_S = 30.0
# wait_started's margin past the connect deadline: a server given up on says so at the deadline itself.
START_GRACE_S = 5.0
CALL_TIMEOUT_S = 120.0
# How long a failed server's last stderr lines are waited for (a child it left may hold the pipe open).
STDERR_WAIT_S = 2.0
# OpenAI's rule for function names, which the chat templates and API clients assume.
_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")


def _unique_name(server: str, tool: str, taken: set[str]) -> str:
    """The tool's own name where no other server's tool has it, else "<server>_<tool>" (made to fit OpenAI's
    64-character rule, with a number where even that is taken)."""
    name = _NAME_CHARS.sub("_", tool)[:64] or "tool"
    if name in taken:
        name = _NAME_CHARS.sub("_", f"{server}_{tool}")[:64]
    base, n = name, 2
    while name in taken:
        name, n = f"{base[:60]}_{n}", n + 1
    taken.add(name)
    return name


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def _flatten(exc: BaseException) -> BaseException:
    """The first real error inside an exception group (anyio's task groups wrap what went wrong)."""
    while getattr(exc, "exceptions", None):  # BaseExceptionGroup, which Python 3.10 lacks
        exc = exc.exceptions[0]  # type: ignore[attr-defined]
    return exc


def _problem(spec: ServerSpec, exc: BaseException, stderr: str) -> str:
    exc = _flatten(exc)
    said = _last_line(stderr)
    if isinstance(exc, FileNotFoundError):
        return f'Tool server "{spec.name}" could not start: {spec.command} was not found.'
    message = getattr(getattr(exc, "error", None), "message", "") or str(exc)
    detail = said or (f"{message}" if message else exc.__class__.__name__)
    return f'Tool server "{spec.name}" stopped: {detail}'


def result_text(result: Any) -> tuple[str, bool]:
    """A CallToolResult as text for the model, and whether the tool reported an error."""
    parts: list[str] = []
    for item in getattr(result, "content", None) or []:
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource":
            resource = item.resource
            parts.append(getattr(resource, "text", None) or f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[link {item.uri}]")
        else:
            parts.append(f"[{kind} ({getattr(item, 'mime_type', '')}) not shown to the model]")
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        parts.append(json.dumps(structured, ensure_ascii=False))
    return "\n".join(parts), bool(getattr(result, "is_error", False))


def _capped(text: str) -> tuple[str, bool]:
    if len(text) <= MAX_RESULT_CHARS:
        return text, False
    return (
        text[:MAX_RESULT_CHARS] + f"\n[… cut: the result had {len(text):,} characters; the first "
        f"{MAX_RESULT_CHARS:,} are shown]"
    ), True


class ToolHost:
    """The servers of one mcp.json, each kept connected. Any thread may call every method; `on_change` is called
    on the host's own thread whenever a server's state changes (a front end posts it to its own thread)."""

    def __init__(
        self,
        specs: Sequence[ServerSpec],
        on_change: Optional[Callable[[], None]] = None,
        call_timeout_s: float = CALL_TIMEOUT_S,
        connect_timeout_s: float = CONNECT_TIMEOUT_S,
    ):
        self.specs = tuple(specs)
        self.call_timeout_s = call_timeout_s
        self.connect_timeout_s = connect_timeout_s
        self._on_change = on_change
        self._lock = threading.Lock()
        self._states: dict[str, ServerState] = {s.name: ServerState(s, "starting") for s in self.specs}
        self._calls: dict[str, asyncio.Queue] = {}
        self._scopes: dict[str, Any] = {}  # each server's anyio.CancelScope, on the host's thread
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop: Optional[asyncio.Event] = None
        self._thread: Optional[threading.Thread] = None
        self._started = threading.Event()

    # -- for callers ------------------------------------------------------------------------------------------

    def start(self) -> None:
        if self._thread is None:
            server_log()  # installed before any server can log
            self._thread = threading.Thread(target=self._run, name="SpecChat MCP tools", daemon=True)
            self._thread.start()
            self._started.wait(10)

    def states(self) -> tuple[ServerState, ...]:
        with self._lock:
            return tuple(self._states[s.name] for s in self.specs)

    def tools(self) -> tuple[ToolInfo, ...]:
        """Every ready server's tools, in mcp.json's order, named for the model: a name two servers share goes
        to the server listed first, whichever started first, so the names stay the same from run to run."""
        taken: set[str] = set()
        return tuple(
            dataclasses.replace(tool, name=_unique_name(state.spec.name, tool.tool, taken))
            for state in self.states()
            if state.phase == "ready"
            for tool in state.tools
        )

    def wait_started(self, timeout_s: Optional[float] = None) -> bool:
        """Waits until no server is still starting; False when some still are after `timeout_s` (by default, until
        each has answered or been given up on at connect_timeout_s)."""
        if timeout_s is None:
            timeout_s = self.connect_timeout_s + START_GRACE_S
        deadline = time.monotonic() + timeout_s
        while any(state.phase == "starting" for state in self.states()):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.05)
        return True

    def call(self, name: str, arguments: dict[str, Any]) -> concurrent.futures.Future:
        """Runs the tool the model knows as `name`. The Future gives a ToolResult, never raises: a tool that is
        unknown, fails, times out or whose server is gone gives a result with is_error. Cancelling the Future
        stops the call."""
        tool = find_tool(self.tools(), name)
        if tool is None:
            future: concurrent.futures.Future = concurrent.futures.Future()
            future.set_result(no_such_tool(name))
            return future
        return self.call_tool(tool, arguments)

    def call_tool(self, tool: ToolInfo, arguments: dict[str, Any]) -> concurrent.futures.Future:
        """Runs exactly `tool` (as resolved when the person was asked): on its own server, and only while that
        server still offers it unchanged; otherwise nothing runs and the result says so. As `call` otherwise."""
        future: concurrent.futures.Future = concurrent.futures.Future()
        if same_tool(self.tools(), tool) is None:
            future.set_result(tool_changed(tool))
        elif self._loop is None or tool.server not in self._calls:
            future.set_result(ToolResult(f'Tool server "{tool.server}" is not running.', is_error=True))
        else:
            queue = self._calls[tool.server]
            self._loop.call_soon_threadsafe(queue.put_nowait, (tool, arguments, future))
        return future

    def close(self) -> None:
        """Stops every server (a stdio server's process is ended) and the thread; returns when they are gone."""
        loop, stop = self._loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)
        if self._thread is not None:
            self._thread.join(timeout=15)

    # -- the host's thread ------------------------------------------------------------------------------------

    def _set(self, name: str, state: ServerState) -> None:
        with self._lock:
            self._states[name] = state
        if self._on_change is not None:
            self._on_change()

    def _run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._calls = {spec.name: asyncio.Queue() for spec in self.specs}
        self._started.set()
        tasks = [asyncio.create_task(self._serve(spec)) for spec in self.specs]
        await self._stop.wait()
        # Each server's own cancel scope, not task.cancel(): the SDK's shutdown (stdin closed, then the process
        # group ended) runs shielded, which only a scope's cancellation respects.
        for scope in list(self._scopes.values()):
            scope.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for spec in self.specs:
            if self._states[spec.name].phase != "failed":
                self._set(spec.name, ServerState(spec, "stopped"))
            self._refuse_waiting(spec.name, f'Tool server "{spec.name}" was stopped.')

    def _refuse_waiting(self, server: str, text: str) -> None:
        queue = self._calls.get(server)
        while queue is not None and not queue.empty():
            _tool, _arguments, future = queue.get_nowait()
            if not future.done():
                future.set_result(ToolResult(text, is_error=True))

    def _transport(self, spec: ServerSpec, errlog):
        if spec.url:
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            return streamable_http_client(spec.url, http_client=httpx2.AsyncClient(headers=dict(spec.headers)))
        from mcp.client.stdio import StdioServerParameters, stdio_client

        params = StdioServerParameters(
            command=spec.command,
            args=list(spec.args),
            env=dict(spec.env) or None,
            cwd=spec.cwd or None,
            encoding_error_handler="replace",
        )
        return stdio_client(params, errlog=errlog)

    async def _serve(self, spec: ServerSpec) -> None:
        import anyio

        serving.set(spec.name)  # the SDK's reader tasks inherit it: its log lines name this server
        # A server that never finishes its handshake is given up on at connect_timeout_s, and said so at once; its
        # process group is ended while the state already says why.
        scope = self._scopes[spec.name] = anyio.CancelScope()
        connected, timed_out = False, False

        def give_up() -> None:
            nonlocal timed_out
            if not connected and not (self._stop is not None and self._stop.is_set()):
                timed_out = True
                self._fail(spec, f'Tool server "{spec.name}" did not answer within {self.connect_timeout_s:.0f} s.')
                scope.cancel()

        watchdog = asyncio.get_running_loop().call_later(self.connect_timeout_s, give_up)
        stderr = StderrTail()
        group = ProcessGroup(stderr) if not spec.url else None
        try:
            with scope:
                from mcp import Client

                client = Client(self._transport(spec, stderr.file), read_timeout_seconds=self.call_timeout_s)
                if group is not None:
                    asyncio.get_running_loop().create_task(group.find())
                async with client:
                    listing = await client.list_tools()
                    connected = True
                    watchdog.cancel()
                    tools = tuple(
                        ToolInfo(spec.name, t.name, t.name, t.description or "", dict(t.input_schema or {}))
                        for t in listing.tools
                    )
                    self._set(spec.name, ServerState(spec, "ready", tools))
                    await self._answer_calls(spec, client)
        except BaseException as exc:  # the SDK's task groups raise ExceptionGroups
            if isinstance(exc, asyncio.CancelledError):
                raise
            if not timed_out and not (self._stop is not None and self._stop.is_set()):
                stderr.close()
                await asyncio.to_thread(stderr.wait, STDERR_WAIT_S)
                self._fail(spec, _problem(spec, exc, stderr.text()))
        finally:
            watchdog.cancel()
            stderr.close()
            if group is not None:
                group.end()  # what outlived the SDK's shutdown (a child its leader left behind) ends too
            server_log().flush_server(spec.name)

    def _fail(self, spec: ServerSpec, problem: str) -> None:
        """The first sentence stays: closing a connection that broke raises again, with less to say."""
        if self.states()[self.specs.index(spec)].phase != "failed":
            self._set(spec.name, ServerState(spec, "failed", problem=problem))
        self._refuse_waiting(spec.name, problem)

    async def _answer_calls(self, spec: ServerSpec, client) -> None:
        queue = self._calls[spec.name]
        while True:
            tool, arguments, future = await queue.get()
            if future.cancelled():
                continue
            task = asyncio.create_task(self._one_call(client, tool, arguments))
            loop = asyncio.get_running_loop()
            future.add_done_callback(lambda f, t=task, on=loop: f.cancelled() and on.call_soon_threadsafe(t.cancel))
            try:
                result = await task
            except asyncio.CancelledError:
                if future.cancelled():  # the caller stopped this call; the server goes on
                    continue
                if not future.done():  # the host is closing
                    future.set_result(ToolResult(f'Tool server "{spec.name}" was stopped.', is_error=True))
                raise
            except Exception as exc:
                # The connection is gone: the server has failed (said first, so whoever reads the call's result
                # sees the server's state too), and this call fails with the same sentence.
                problem = _problem(spec, exc, "")
                self._fail(spec, problem)
                if not future.done():
                    future.set_result(ToolResult(problem, is_error=True))
                return
            if not future.done():
                future.set_result(result)

    async def _one_call(self, client, tool: ToolInfo, arguments: dict[str, Any]) -> ToolResult:
        import anyio

        began = time.monotonic()
        try:
            with anyio.fail_after(self.call_timeout_s):
                result = await client.call_tool(tool.tool, arguments)
        except (asyncio.TimeoutError, TimeoutError):
            return ToolResult(
                f"The tool {tool.name} did not finish within {self.call_timeout_s:.0f} s and was stopped.",
                is_error=True,
                seconds=time.monotonic() - began,
            )
        except Exception as exc:
            from mcp.shared.exceptions import MCPError

            from mcp_types import CONNECTION_CLOSED

            if isinstance(exc, MCPError) and exc.code != CONNECTION_CLOSED:
                # The server refused the call (unknown arguments, say); it lives on.
                return ToolResult(
                    f"The tool {tool.name} refused the call: {exc.error.message}",
                    is_error=True,
                    seconds=time.monotonic() - began,
                )
            raise  # the connection is gone: the server has failed
        text, is_error = result_text(result)
        text, truncated = _capped(text)
        return ToolResult(text, is_error, time.monotonic() - began, truncated)
