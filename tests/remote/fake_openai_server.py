"""A small scripted OpenAI-compatible server on 127.0.0.1 (stdlib only) for the remote engine's tests.

`FakeServer.script` decides what /v1/chat/completions does: stream `chunks` (dicts sent as SSE events, chunked
transfer encoding like llama-server) and `raw` (bytes sent as they are), then finish, or drop the connection, or
stall, or never end. It can also be hostile in size: an endless stream, a flood of bytes with no newline, a huge
error body, a huge model list. Requests are recorded; `sent_bytes` counts what a flood managed to send before the
client hung up.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Optional


@dataclass
class Script:
    models: list = field(default_factory=lambda: [("fake-model", "llamacpp")])
    api_key: Optional[str] = None  # when set, requests without "Bearer <api_key>" get 401
    chunks: list = field(default_factory=list)  # the chat stream's events
    raw: list = field(default_factory=list)  # bytes sent after `chunks` as they are (b"data: [1,2,3]\n\n")
    # "done": [DONE]; "drop": close mid-stream; "stall": go silent for stall_s; "endless": content chunks until the
    # client hangs up; "flood": "data: aaaa..." with no newline until the client hangs up
    end: str = "done"
    stall_s: float = 0.0
    delay_before_s: float = 0.0  # silence before the response headers (a slow server)
    status: int = 200  # a chat status other than 200 answers with error_body (or error_flood_bytes of "x")
    error_body: dict = field(default_factory=dict)
    error_flood_bytes: int = 0
    models_body: Optional[object] = None  # when set, /v1/models answers this JSON instead of `models`
    flood_limit_bytes: int = 400 << 20  # the most an "endless" or "flood" end sends (a bound for the test run)
    content_type: str = "text/event-stream"  # "text/html": a web page answered with 200
    # "comments" end: ": keep-alive" every comment_every_s until the client hangs up (at most comment_limit)
    comment_every_s: float = 0.1
    comment_limit: int = 600
    comment: bytes = b": keep-alive\n\n"  # what the "comments" end repeats (an empty event keeps a stream open too)


def content_chunk(text: str, timings: Optional[dict] = None, finish: Optional[str] = None) -> dict:
    chunk = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": {"content": text} if text else {}, "finish_reason": finish}],
    }
    if timings is not None:
        chunk["timings"] = timings
    return chunk


def delta_chunk(delta: dict, timings: Optional[dict] = None, finish: Optional[str] = None, **extra) -> dict:
    """A chunk with any `delta` (a thinking model's `reasoning_content` or `reasoning`, say); `extra` adds top-level
    fields (`usage`)."""
    chunk = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }
    if timings is not None:
        chunk["timings"] = timings
    return chunk


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: "_Server"

    def log_message(self, *args) -> None:
        pass

    def _json(self, status: int, data: dict) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _authorized(self) -> bool:
        self.server.authorizations.append(self.headers.get("Authorization"))
        key = self.server.script.api_key
        if key and self.headers.get("Authorization") != f"Bearer {key}":
            self._json(401, {"error": {"message": "Invalid API Key", "type": "authentication_error"}})
            return False
        return True

    def do_GET(self) -> None:
        if not self._authorized():
            return
        if self.path == "/v1/models" and self.server.script.models_body is not None:
            self._json(200, self.server.script.models_body)
        elif self.path == "/v1/models":
            data = [{"id": m, "object": "model", "owned_by": o} for m, o in self.server.script.models]
            self._json(200, {"object": "list", "data": data})
        elif self.path == "/props":
            self._json(200, {"default_generation_settings": {"n_ctx": 2048}})
        else:
            self._json(404, {"error": {"message": "File Not Found"}})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        self.server.requests.append(body)
        if not self._authorized():
            return
        script = self.server.script
        time.sleep(script.delay_before_s)
        if script.status != 200 and script.error_flood_bytes:
            self._flood_error(script)
            return
        if script.status != 200:
            self._json(script.status, script.error_body)
            return
        if body.get("model") not in [m for m, _ in script.models]:
            self._json(404, {"error": {"message": f"model '{body.get('model')}' not found"}})
            return
        self.send_response(200)
        self.send_header("Content-Type", script.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for chunk in script.chunks:
            self._send_chunk(f"data: {json.dumps(chunk)}\n\n".encode())
        for raw in script.raw:
            self._send_chunk(raw)
        if script.end in ("endless", "flood"):
            self._flood(script)
            return
        if script.end == "drop":
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)  # no terminating chunk: the stream ends mid-reply
            return
        if script.end == "stall":
            time.sleep(script.stall_s)
        if script.end == "comments":
            for _ in range(script.comment_limit):
                if not self._send_chunk(script.comment):
                    return
                time.sleep(script.comment_every_s)
        self._send_chunk(b"data: [DONE]\n\n")
        self._send_chunk(b"")

    def _send_chunk(self, data: bytes) -> bool:
        try:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()
            return True
        except OSError:
            return False

    def _flood(self, script: Script) -> None:
        """Send until the client hangs up (or flood_limit_bytes): one content chunk after another, or one line."""
        if script.end == "endless":
            piece = f"data: {json.dumps(content_chunk('x'))}\n\n".encode()
        else:
            self._send_chunk(b"data: ")
            piece = b"a" * (64 << 10)
        while self.server.sent_bytes < script.flood_limit_bytes and self._send_chunk(piece):
            self.server.sent_bytes += len(piece)

    def _flood_error(self, script: Script) -> None:
        self.send_response(script.status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(script.error_flood_bytes))
        self.end_headers()
        piece = b"x" * (64 << 10)
        try:
            while self.server.sent_bytes < script.error_flood_bytes:
                self.wfile.write(piece)
                self.server.sent_bytes += len(piece)
        except OSError:
            pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    script: Script
    requests: list
    authorizations: list  # each request's Authorization header (None: none)
    sent_bytes: int = 0

    def handle_error(self, request, client_address) -> None:
        pass  # a client that closed its end (Stop, a timeout) is part of the tests


class FakeServer:
    """Use as a context manager; `url` is its base URL."""

    def __init__(self, script: Optional[Script] = None):
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.script = script or Script()
        self._server.requests = []
        self._server.authorizations = []
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def script(self) -> Script:
        return self._server.script

    @property
    def requests(self) -> list:
        return self._server.requests

    @property
    def authorizations(self) -> list:
        return self._server.authorizations

    @property
    def sent_bytes(self) -> int:
        """What an "endless"/"flood" end or an error flood sent before the client hung up."""
        return self._server.sent_bytes

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> "FakeServer":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()
