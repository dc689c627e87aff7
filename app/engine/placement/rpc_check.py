"""Is an RPC worker a ggml-rpc-server this llama.cpp can use? Asked by a short-lived child process that may die
instead of the caller, with a timeout, before any worker is registered in this process.

ggml-rpc's client aborts its process on a reply it cannot read (a peer that accepts and closes, sends garbage,
or speaks another protocol version), and blocks with no timeout on a peer that never answers. So the child does
what registering does, in this order (ggml/src/ggml-rpc/ggml-rpc.cpp, the client side):
1. the greeting, in Python, with a socket timeout: RPC_CMD_HELLO is one command byte, a little-endian uint64
   payload size, and RPC_CONN_CAPS_SIZE zero bytes of connection capabilities; the worker answers a uint64 size
   and {major, minor, patch, padding, caps}. A closed connection, a reply of another size or silence become a
   sentence naming what happened;
2. then ggml itself: ggml_backend_rpc_add_server (its own HELLO and version check, the device count) and each
   device's memory, where an abort kills only the child; its last words become the reason.
The parent (rpc.register) registers the workers only after the child said yes.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import socket
import struct
import subprocess
import sys
from pathlib import Path
from typing import Optional, Sequence

from app.engine.child_process import how_it_ended, last_error_line
from app.engine.errors import ModelLoadError
from app.engine.placement.ggml_library import backend_functions, libraries, symbol

RPC_CMD_HELLO = 14
RPC_CONN_CAPS_SIZE = 24
HELLO_REPLY_SIZE = 4 + RPC_CONN_CAPS_SIZE
CONNECT_TIMEOUT_S = 5.0
# How long a worker may take to answer one message of the check; a worker on a busy GPU box answers in milliseconds.
ANSWER_TIMEOUT_S = 5.0
# The whole child: start Python and llama.cpp (a few seconds on a loaded machine), then the checks.
CHECK_TIMEOUT_S = 60.0
SAME_VERSION = "start `ggml-rpc-server -H HOST -p PORT` there from the same llama.cpp version"

_SOURCE_PLACE = re.compile(r"^\S*[/\\][^/\\\s]+:\d+:\s*")

_CHILD = r"""
import sys
sys.path.insert(0, sys.argv[1])
from app.engine.placement.rpc_check import child_main
sys.exit(child_main(sys.argv[2:]))
"""


class WorkerProblem(Exception):
    """What is wrong with one worker, as the sentence shown."""


def _recv_exactly(sock: socket.socket, size: int) -> Optional[bytes]:
    data = bytearray()
    while len(data) < size:
        piece = sock.recv(size - len(data))
        if not piece:
            return None
        data += piece
    return bytes(data)


def hello(endpoint: str) -> tuple[int, int, int]:
    """The worker's RPC protocol version, from the greeting ggml-rpc opens every connection with. Raises
    WorkerProblem with the sentence for a worker that is absent, closes, answers something else or nothing."""
    host, _, port = endpoint.rpartition(":")
    try:
        sock = socket.create_connection((host.strip("[]"), int(port)), timeout=CONNECT_TIMEOUT_S)
    except socket.timeout:
        raise WorkerProblem(
            f"The RPC worker at {endpoint} did not accept a connection within "
            f"{CONNECT_TIMEOUT_S:.0f} s; check the address and the network."
        ) from None
    except OSError:
        raise WorkerProblem(unreachable(endpoint)) from None
    closed = WorkerProblem(
        f"The RPC worker at {endpoint} closed the connection without answering llama.cpp's greeting; {SAME_VERSION}."
    )
    with sock:
        sock.settimeout(ANSWER_TIMEOUT_S)
        try:
            sock.sendall(bytes([RPC_CMD_HELLO]) + struct.pack("<Q", RPC_CONN_CAPS_SIZE) + bytes(RPC_CONN_CAPS_SIZE))
            header = _recv_exactly(sock, 8)
            if header is None:
                raise closed
            (size,) = struct.unpack("<Q", header)
            if size != HELLO_REPLY_SIZE:
                raise WorkerProblem(
                    f"The RPC worker at {endpoint} answered llama.cpp's greeting with something that "
                    f"is not a ggml-rpc reply; {SAME_VERSION}."
                )
            reply = _recv_exactly(sock, size)
        except socket.timeout:
            raise WorkerProblem(
                f"The RPC worker at {endpoint} accepted the connection but did not answer within "
                f"{ANSWER_TIMEOUT_S:.0f} s; {SAME_VERSION}."
            ) from None
        except (ConnectionResetError, BrokenPipeError):
            raise closed from None
        except OSError as exc:
            raise WorkerProblem(
                f"The RPC worker at {endpoint} dropped the connection during llama.cpp's greeting "
                f"({exc.strerror or type(exc).__name__}); {SAME_VERSION}."
            ) from None
    if reply is None:
        raise WorkerProblem(
            f"The RPC worker at {endpoint} closed the connection in the middle of its answer; {SAME_VERSION}."
        )
    return reply[0], reply[1], reply[2]


def unreachable(endpoint: str) -> str:
    return (
        f"Cannot reach the RPC worker at {endpoint}; start `ggml-rpc-server -H HOST -p PORT` there (from the "
        "same llama.cpp version) and check the address."
    )


def _register_in_ggml(endpoint: str) -> int:
    """What rpc.register does with a worker, here in the child: add it, then ask each device for its memory."""
    g = backend_functions()
    address = g.get_proc(g.reg_by_name(b"RPC"), b"ggml_backend_rpc_add_server") if g.reg_by_name(b"RPC") else None
    if not address:
        raise WorkerProblem("This llama.cpp build has no RPC backend.")
    reg = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)(address)(endpoint.encode("utf-8"))
    if not reg:
        raise WorkerProblem(f"llama.cpp could not use the RPC worker at {endpoint}; {SAME_VERSION}.")
    memory = symbol(
        libraries(),
        "ggml_backend_dev_memory",
        None,
        [ctypes.c_void_p, ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(ctypes.c_size_t)],
    )
    count = g.reg_dev_count(reg)
    for i in range(count):
        free, total = ctypes.c_size_t(0), ctypes.c_size_t(0)
        if memory is not None:
            memory(g.reg_dev_get(reg, i), ctypes.byref(free), ctypes.byref(total))
    return int(count)


def child_main(endpoints: Sequence[str]) -> int:
    """The child's work: one JSON line per step on stdout; exit 0 when every worker passed, 3 for a problem."""
    for endpoint in endpoints:
        print(json.dumps({"checking": endpoint}), flush=True)
        try:
            version = hello(endpoint)
            print(json.dumps({"version": ".".join(map(str, version))}), flush=True)
            _register_in_ggml(endpoint)
        except WorkerProblem as exc:
            print(json.dumps({"problem": str(exc)}), flush=True)
            return 3
    return 0


def check_workers(endpoints: Sequence[str], timeout_s: float = CHECK_TIMEOUT_S) -> None:
    """Raise ModelLoadError with one sentence unless every worker in `endpoints` passes the child's check."""
    if not endpoints:
        return
    root = str(Path(__file__).resolve().parents[3])
    # GGML_NO_BACKTRACE: ggml's abort otherwise attaches gdb to print a backtrace, slow and noisy.
    env = dict(os.environ, GGML_NO_BACKTRACE="1", PYTHONFAULTHANDLER="")
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, root, *endpoints],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired as exc:
        steps = _steps(exc.stdout or b"")
        raise ModelLoadError(
            f"The RPC worker at {steps.get('checking', ', '.join(endpoints))} did not finish "
            f"llama.cpp's handshake within {timeout_s:.0f} s; {SAME_VERSION}."
        ) from None
    except OSError as exc:
        raise ModelLoadError(f"Could not start a process to check the RPC workers ({exc}).") from None
    if done.returncode == 0:
        return
    steps = _steps(done.stdout)
    if "problem" in steps:
        raise ModelLoadError(steps["problem"])
    reason = last_error_line(done.stderr.decode("utf-8", "replace")) or how_it_ended(done.returncode)
    reason = _SOURCE_PLACE.sub("", reason)  # ".../ggml-rpc.cpp:566: Remote RPC server ..." -> "Remote RPC server ..."
    version = f" (it speaks RPC protocol {steps['version']})" if "version" in steps else ""
    raise ModelLoadError(
        f"The RPC worker at {steps.get('checking', ', '.join(endpoints))}{version} answered in a "
        f"way llama.cpp cannot read, which would have stopped SpecChat ({reason}); {SAME_VERSION}."
    )


def _steps(stdout: bytes) -> dict:
    """The child's last word on each step ("checking", "version", "problem")."""
    steps: dict = {}
    for line in stdout.decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict):
            if "checking" in item:
                steps = {}
            steps.update({k: str(v) for k, v in item.items()})
    return steps
