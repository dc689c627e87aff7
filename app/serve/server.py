"""The API server: uvicorn on a thread of its own, answering from a JobQueue that the engine's thread works off.

uvicorn (with Starlette) is used rather than the standard library's http.server: it parses HTTP with h11, bounds
header sizes, notices a client that goes away mid-stream (which cancels its generation), and is kept up by a large
community. It runs with its plain h11 protocol and no extras, on a socket we bind ourselves, so a port in use is
one sentence here, not uvicorn's exit; app.serve.connections adds the bounds uvicorn lacks (a connection limit that
makes room, deadlines for a request's head and body).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Optional

import uvicorn

from app.engine.embedding.worker import EmbeddingWorker
from app.serve.connections import ConnectionLimits, guarded_protocol
from app.serve.http_app import build_app
from app.serve.requests import ApiOptions
from app.serve.jobs import JobQueue, ServedModels

START_DEADLINE_S = 10.0
STOP_DEADLINE_S = 3


class ServeError(Exception):
    """The server could not start; the message is one sentence for a person."""


def base_url(host: str, port: int) -> str:
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


class ApiServer:
    """Start, publish the loaded models, stop: from the thread that owns the engine. The HTTP side runs on its own
    thread; `queue` is where its requests wait for the engine."""

    def __init__(
        self,
        options: ApiOptions,
        connections: ConnectionLimits = ConnectionLimits(),
        embedder: Optional[EmbeddingWorker] = None,
    ):
        self.options = options
        self.embedder = embedder  # serve --embedding's model, started by the caller
        self.connections = connections
        self.queue = JobQueue(options.limits.max_queued)
        self.served = ServedModels()  # replaced whole by publish(): one attribute write, safe across threads
        self.port = options.port
        self._server: Optional[uvicorn.Server] = None
        self._thread: Optional[threading.Thread] = None

    @property
    def url(self) -> str:
        return base_url(self.options.host, self.port)

    def publish(self, served: ServedModels) -> None:
        """What /v1/models lists from now on (call after every load)."""
        self.served = served

    def start(self) -> str:
        """Bind and serve; returns the base URL. Raises ServeError."""
        sock = _bind(self.options.host, self.options.port)
        self.port = sock.getsockname()[1]
        app = build_app(self.options, self.queue, lambda: self.served, self.embedder)
        # The guarded protocol bounds connections and the time a request may take to arrive (connections.py).
        config = uvicorn.Config(
            app,
            log_config=None,
            log_level="warning",
            access_log=False,
            lifespan="off",
            http=guarded_protocol(self.connections),
            timeout_keep_alive=self.connections.idle_timeout_s,
            timeout_graceful_shutdown=STOP_DEADLINE_S,
            h11_max_incomplete_event_size=64 * 1024,
        )
        server = uvicorn.Server(config)
        self._server = server
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [sock]}, name="SpecChat API server", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + START_DEADLINE_S
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise ServeError(f"The API server could not start on {self.url}.")
            time.sleep(0.02)
        return self.url

    def stop(self) -> None:
        """Refuse new requests, end the waiting ones, and stop listening (open streams get STOP_DEADLINE_S)."""
        self.queue.close()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_DEADLINE_S + 2)
        self._server = self._thread = None


def _bind(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror:
        raise ServeError(f'"{host}" is not an address this machine can listen on.') from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(64)
    except OSError as exc:
        sock.close()
        if exc.errno in (98, 48):  # EADDRINUSE on Linux, macOS
            raise ServeError(f"Port {port} on {host} is in use; choose another port.") from None
        raise ServeError(f"Cannot listen on {host}:{port} ({exc.strerror or exc}).") from None
    sock.set_inheritable(False)
    return sock
