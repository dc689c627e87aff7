"""A hostile llama.cpp RPC worker on 127.0.0.1 (stdlib only): it accepts and closes, sends garbage, never answers,
speaks another protocol version, or greets correctly and then answers garbage.

The greeting's format is ggml-rpc's (see app.engine.placement.rpc_check); `client_version()` is the version of the
installed llama.cpp, read from the ggml-rpc.h header llama-cpp-python installs beside itself.
"""

from __future__ import annotations

import importlib.util
import re
import socket
import struct
import threading
from pathlib import Path
from typing import Optional

from app.engine.placement.rpc_check import HELLO_REPLY_SIZE, RPC_CONN_CAPS_SIZE

MODES = ("close", "garbage", "silent", "old_version", "hello_then_garbage")


def client_version() -> Optional[tuple[int, int, int]]:
    spec = importlib.util.find_spec("llama_cpp")
    if spec is None or spec.origin is None:
        return None
    header = Path(spec.origin).parents[1] / "include" / "ggml-rpc.h"
    try:
        text = header.read_text()
    except OSError:
        return None
    found = [re.search(rf"RPC_PROTO_{part}_VERSION\s+(\d+)", text) for part in ("MAJOR", "MINOR", "PATCH")]
    if not all(found):
        return None
    return tuple(int(m.group(1)) for m in found)  # type: ignore[return-value,union-attr]


class FakeRpcPeer:
    """Use as a context manager; `endpoint` is "127.0.0.1:PORT", `connections` counts accepted connections."""

    def __init__(self, mode: str):
        assert mode in MODES
        self.mode = mode
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"127.0.0.1:{self._listener.getsockname()[1]}"
        self._stop = threading.Event()
        self._open: list[socket.socket] = []
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> "FakeRpcPeer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._listener.close()
        for conn in self._open:
            conn.close()
        self._thread.join(timeout=5)

    def _serve(self) -> None:
        self._listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except (socket.timeout, OSError):
                continue
            self.connections += 1
            self._open.append(conn)
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        try:
            if self.mode == "close":
                conn.close()
            elif self.mode == "garbage":
                conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                conn.close()
            elif self.mode == "silent":
                self._stop.wait()
            else:
                conn.recv(1 + 8 + RPC_CONN_CAPS_SIZE)
                major, minor, patch = client_version() or (1, 0, 0)
                if self.mode == "old_version":
                    major = max(0, major - 1)
                conn.sendall(
                    struct.pack("<Q", HELLO_REPLY_SIZE) + bytes([major, minor, patch, 0]) + bytes(RPC_CONN_CAPS_SIZE)
                )
                while not self._stop.is_set():
                    if not conn.recv(4096):
                        return
                    conn.sendall(b"\xff" * 64)  # every later command gets an answer of the wrong size
        except OSError:
            pass
