"""A stdio tool server's whole process tree, ended when the server ends.

The SDK starts each server in a session of its own (its pid is its process group's id) and, on shutdown, closes
its stdin, waits, then signals the group, but only while the leader itself still runs: a leader that exits on EOF
leaves its children running (npx's node, a shell's background job), and a shutdown cut short leaves everything. The
SDK does not say which pid it started, so it is found here: the child of this process whose stderr is the pipe
this host gave that server (app.mcp.server_log.StderrTail). Once the server has ended, its group is sent SIGKILL.

Linux only (/proc); elsewhere the SDK's own shutdown is all there is.
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path
from typing import Optional

from app.mcp.server_log import StderrTail

# How long the server's process is looked for after the SDK is asked to start it (a busy machine forks slowly).
FIND_FOR_S = 30.0
_POLL_S = 0.02


def _children() -> list[int]:
    pids: list[int] = []
    for task in Path("/proc/self/task").iterdir():
        try:
            pids.extend(int(pid) for pid in (task / "children").read_text().split())
        except (OSError, ValueError):
            continue
    return pids


class ProcessGroup:
    def __init__(self, stderr: StderrTail):
        self._pipe = stderr.pipe_id
        self.leader: Optional[int] = None
        self._ended = False

    def _match(self) -> Optional[int]:
        for pid in _children():
            try:
                if os.readlink(f"/proc/{pid}/fd/2") == self._pipe and os.getpgid(pid) == pid:
                    return pid
            except OSError:
                continue
        return None

    async def find(self) -> None:
        """Looks for the server's process until it is found, the server has ended, or FIND_FOR_S."""
        if not Path("/proc/self/task").is_dir():
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FIND_FOR_S
        while self.leader is None and not self._ended and loop.time() < deadline:
            self.leader = self._match()
            if self.leader is None:
                await asyncio.sleep(_POLL_S)

    def end(self) -> None:
        """SIGKILL to whatever of the server's process group still runs; once."""
        self._ended = True
        if self.leader is not None:
            try:
                os.killpg(self.leader, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            self.leader = None
