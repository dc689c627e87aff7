"""Connections that send nothing, or a byte a second, cannot drain the API: a well-behaved client's chat is still
answered within a second, and a request whose head or body never completes is closed."""

from __future__ import annotations

import socket
import time

from app.serve.connections import ConnectionLimits
from tests.serve.api_fixtures import chat_body, client, running_api

LIMITS = ConnectionLimits(max_connections=16, head_timeout_s=1.0, body_timeout_s=1.0, idle_timeout_s=1)


def _idle_sockets(url: str, count: int) -> list[socket.socket]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    sockets = []
    for n in range(count):
        sock = socket.create_connection((host, int(port)), timeout=5)
        if n % 4 == 0:
            sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\n")  # a slowloris: a head that never ends
        sockets.append(sock)
    return sockets


def _closed_by_server(sock: socket.socket, within_s: float) -> bool:
    sock.settimeout(within_s)
    try:
        return sock.recv(4096) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def test_more_idle_sockets_than_the_limit_leave_chats_answered(tiny_models):
    with running_api(tiny_models, connections=LIMITS) as api:
        with client() as http:  # the engine is warm before the clock starts
            assert http.post(f"{api.url}/v1/chat/completions", json=chat_body("hi", 2)).status_code == 200
        idle = _idle_sockets(api.url, 3 * LIMITS.max_connections)
        try:
            started = time.monotonic()
            with client() as http:
                answer = http.post(f"{api.url}/v1/chat/completions", json=chat_body("hi", 2))
            waited = time.monotonic() - started
            assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"]
            assert waited < 5, waited  # generous on a loaded machine: without the guard it never came
        finally:
            for sock in idle:
                sock.close()


def test_a_head_that_never_ends_is_closed(tiny_models):
    with running_api(tiny_models, connections=LIMITS) as api:
        [sock] = _idle_sockets(api.url, 1)
        try:
            deadline = time.monotonic() + 10
            closed = False
            while not closed and time.monotonic() < deadline:
                sock.sendall(b"X")  # one byte a second does not keep it open
                closed = _closed_by_server(sock, 1.0)
            assert closed
        except (BrokenPipeError, ConnectionResetError):
            pass  # closed while we wrote: what the test waits for
        finally:
            sock.close()
