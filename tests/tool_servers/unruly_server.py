"""Unruly stdio tool servers for the tests (stdlib only, started by the tests themselves).

python -m tests.tool_servers.unruly_server silent PIDFILE   never answers `initialize`; starts a child that
                                                              outlives it, and writes both pids to PIDFILE
python -m tests.tool_servers.unruly_server flood N          prints N lines that are not JSON-RPC, and as much on
                                                              stderr, then serves the real test server
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time


def silent(pid_file: str) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # only SIGKILL ends it
    child = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"],
        stdin=subprocess.DEVNULL,
    )
    with open(pid_file + ".tmp", "w") as out:
        out.write(f"{os.getpid()} {child.pid}\n")
    os.replace(pid_file + ".tmp", pid_file)
    while True:  # reads its requests and answers none, even after stdin closes
        if not sys.stdin.buffer.readline():
            time.sleep(600)


def flood(lines: int) -> None:
    junk = b"this is not JSON-RPC, line %d\n"
    out = sys.stdout.buffer
    for i in range(lines):
        out.write(junk % i)
        sys.stderr.buffer.write(junk % i)
    out.flush()
    sys.stderr.flush()
    from tests.tool_servers.tool_server import server

    server.run("stdio")


if __name__ == "__main__":
    if sys.argv[1] == "silent":
        silent(sys.argv[2])
    else:
        flood(int(sys.argv[2]))
