"""Talking to an OpenAI-compatible server (llama.cpp's llama-server, vLLM, LM Studio, Ollama, ...): its model list
and streamed chat completions (server-sent events), with every failure turned into one sentence a person can act on.

A server is not trusted. What it sends is read in bounded pieces (a line, an error body, a model list each have a
cap), raw (Accept-Encoding: identity, so no compression bomb is inflated), and every text it sends that reaches a
message is made one clean line (app.engine.remote.chunks). Stop and the reply's overall deadline shut the stream's
socket down, which wakes a read blocked on a silent server at once.

The API key is a secret: it travels only in the Authorization header to the URL it was given for (redirects are
not followed), and is never put in a message or a log line. Credentials in a URL (user:pass@host) are sent as HTTP
basic auth by the client but never shown: every message names the server by display_url(). HTTP goes through
httpx2 (the maintained httpx line huggingface_hub 2 depends on), or httpx where only that is installed; both have
the same API.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from dataclasses import dataclass
from typing import Generator, Iterator, Optional
from urllib.parse import urlsplit

from app.common.http_client import http_client, is_loopback_host
from app.engine.errors import ModelLoadError
from app.engine.remote.chunks import one_line
from app.engine.remote.server_errors import (
    CONNECT_TIMEOUT_S,
    READ_TIMEOUT_S,
    ConnectionDropped,
    ServerError,
    display_url,
    server_message,
    silent_sentence,
    status_error,
    transport_error,
)
from app.engine.targets import normalize_url

_http = http_client  # the window imports this module at start: the client is imported when first needed


def _httpcore():
    try:
        import httpcore2 as httpcore
    except ImportError:  # pragma: no cover
        import httpcore
    return httpcore


# How long a stream may go on without a token (text, thinking or a call) while the server sends keep-alive comments
# or empty events: as long as it may be silent. SPECCHAT_SILENT_STREAM_S sets another (the tests' short one).
SILENT_STREAM_S = READ_TIMEOUT_S
SILENT_STREAM_ENV = "SPECCHAT_SILENT_STREAM_S"
# How often the stream's watcher looks at the Stop flag and the deadline while the server is silent.
CANCEL_POLL_S = 0.05
# Caps on what a server may make this process hold. An SSE line is one event (llama-server's are under 2 KB); an
# error body only yields a 200-character sentence; a model list of a thousand entries is already unusable.
MAX_LINE_BYTES = 1 << 20
MAX_ERROR_BODY_BYTES = 64 << 10
MAX_JSON_BODY_BYTES = 4 << 20
MAX_MODELS = 1000


def silent_stream_s() -> float:
    """SILENT_STREAM_S, or SPECCHAT_SILENT_STREAM_S where that holds a positive number of seconds."""
    try:
        value = float(os.environ.get(SILENT_STREAM_ENV, ""))
    except ValueError:
        return SILENT_STREAM_S
    return value if 0 < value < float("inf") else SILENT_STREAM_S


@dataclass(frozen=True)
class ServerModel:
    """One entry of /v1/models. `owned_by` is "llamacpp" for llama.cpp's llama-server."""

    id: str
    owned_by: str = ""


def is_loopback_url(url: str) -> bool:
    """Whether `url`'s host is this machine (localhost, 127.0.0.0/8, ::1)."""
    try:
        host = urlsplit(normalize_url(url)).hostname or ""
    except ValueError:
        return False
    return is_loopback_host(host)


def _headers(api_key: Optional[str]) -> dict:
    headers = {"Accept": "application/json", "Accept-Encoding": "identity"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _timeout(read_timeout_s: float):
    httpx = _http()
    return httpx.Timeout(
        connect=CONNECT_TIMEOUT_S, read=read_timeout_s, write=CONNECT_TIMEOUT_S, pool=CONNECT_TIMEOUT_S
    )


class _Sockets:
    """The sockets a client opened, so that another thread can shut them down: shutdown() wakes a recv() blocked on
    a silent server, where closing the response from another thread does not."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self.shut = False

    def add(self, sock: Optional[socket.socket]) -> None:
        if sock is None:
            return
        with self._lock:
            self._open.append(sock)
            shut = self.shut
        if shut:
            self.shut_down()

    def shut_down(self) -> None:
        with self._lock:
            self.shut = True
            open_now = list(self._open)
        for sock in open_now:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed


def _connect_unless_stopped(connect, sockets: _Sockets, stopped_error: type[Exception]):
    """`connect()`'s stream, unless Stop comes first: then `stopped_error` at once. A connect to a host that drops
    packets blocks for its whole timeout (CONNECT_TIMEOUT_S) with no socket to shut down yet, so it runs on a
    thread of its own, which closes what it gets once nobody waits for it."""
    lock = threading.Lock()
    outcome: dict = {}
    done = threading.Event()

    def run() -> None:
        try:
            stream, error = connect(), None
        except Exception as exc:  # handed to the waiting thread, or dropped with the connection nobody wants
            stream, error = None, exc
        with lock:
            abandoned = outcome.get("abandoned", False)
            outcome.update(stream=stream, error=error)
            done.set()
        if abandoned and stream is not None:
            stream.close()

    threading.Thread(target=run, name="server connect", daemon=True).start()
    while not done.wait(CANCEL_POLL_S):
        if sockets.shut:
            with lock:
                if not done.is_set():
                    outcome["abandoned"] = True
                    raise stopped_error("stopped while connecting")
    if outcome["error"] is not None:
        raise outcome["error"]
    return outcome["stream"]


def _client(read_timeout_s: float, sockets: Optional[_Sockets] = None):
    """An httpx client that reaches the server directly (trust_env=False: never through the proxy the environment
    names for the internet), follows no redirect (the key goes to the URL it was given for), and, with `sockets`,
    records every socket it opens."""
    httpx = _http()
    if sockets is None:
        return httpx.Client(timeout=_timeout(read_timeout_s), trust_env=False, follow_redirects=False)
    httpcore = _httpcore()

    class RecordingBackend(httpcore.SyncBackend):  # type: ignore[name-defined]
        def connect_tcp(self, *args, **kwargs):
            stream = _connect_unless_stopped(
                lambda: super(RecordingBackend, self).connect_tcp(*args, **kwargs), sockets, httpcore.ConnectError
            )
            sockets.add(stream.get_extra_info("socket"))
            return stream

    transport = httpx.HTTPTransport(trust_env=False)
    # httpx has no public way to reach its sockets; the pool is rebuilt with the same settings and a backend that
    # records them (tests/remote cover Stop before and after the response headers, so an httpx change shows).
    transport._pool = httpcore.ConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False), network_backend=RecordingBackend()
    )
    return httpx.Client(timeout=_timeout(read_timeout_s), trust_env=False, follow_redirects=False, transport=transport)


def _read_capped(response, limit: int) -> tuple[bytes, bool]:
    """At most `limit` bytes of the body, and whether there was more (the rest is never read)."""
    out = bytearray()
    for piece in response.iter_raw():
        out += piece
        if len(out) > limit:
            return bytes(out[:limit]), True
    return bytes(out), False


def _get_json(url: str, path: str, api_key: Optional[str], timeout_s: float) -> tuple[int, object]:
    """GET `path` from the server: (status, its JSON or None). The body is read up to MAX_JSON_BODY_BYTES."""
    httpx = _http()
    try:
        with _client(timeout_s) as client:
            with client.stream("GET", f"{url}{path}", headers=_headers(api_key)) as response:
                if response.status_code != 200:
                    body, _ = _read_capped(response, MAX_ERROR_BODY_BYTES)
                    raise status_error(url, response.status_code, body, has_key=bool(api_key))
                body, cut = _read_capped(response, MAX_JSON_BODY_BYTES)
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise transport_error(url, exc) from None
    if cut:
        raise ServerError(
            f"The server at {display_url(url)} answered {path} with more than "
            f"{MAX_JSON_BODY_BYTES >> 20} MB; is it an OpenAI-compatible server?"
        )
    try:
        return 200, json.loads(body.decode("utf-8", "replace"))
    except (ValueError, RecursionError):
        return 200, None


def list_models(url: str, api_key: Optional[str] = None, timeout_s: float = CONNECT_TIMEOUT_S) -> list[ServerModel]:
    """The models the server offers (GET /v1/models), at most MAX_MODELS of them. Raises ServerError."""
    url = normalize_url(url)
    _, data = _get_json(url, "/v1/models", api_key, timeout_s)
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        raise ServerError(
            f"The server at {display_url(url)} did not answer /v1/models with a model list; is it an "
            "OpenAI-compatible server?"
        )
    models: list[ServerModel] = []
    for entry in entries:
        model_id = entry.get("id") if isinstance(entry, dict) else None
        # An id is sent back to the server as it is; one that is not a clean short line is not offered.
        if isinstance(model_id, str) and model_id and model_id == one_line(model_id, 256):
            owner = entry.get("owned_by")
            models.append(ServerModel(model_id, one_line(owner, 64) if isinstance(owner, str) else ""))
            if len(models) == MAX_MODELS:
                break
    return models


def server_props(url: str, api_key: Optional[str] = None) -> dict:
    """llama-server's /props (its context size, among others); {} when the server has none."""
    try:
        _, data = _get_json(normalize_url(url), "/props", api_key, CONNECT_TIMEOUT_S)
    except ServerError:
        return {}
    return data if isinstance(data, dict) else {}


def check_model(url: str, model: str, api_key: Optional[str] = None) -> ServerModel:
    """The server's entry for `model`; ModelLoadError naming what it offers when it has no such model."""
    models = list_models(url, api_key)
    for entry in models:
        if entry.id == model:
            return entry
    offered = ", ".join(m.id for m in models[:8]) or "none"
    raise ModelLoadError(
        f'The server at {display_url(normalize_url(url))} has no model "{one_line(model)}"; '
        f"it offers: {one_line(offered, 400)}."
    )


def stream_chat(
    url: str,
    body: dict,
    api_key: Optional[str],
    cancel=None,
    read_timeout_s: float = READ_TIMEOUT_S,
    deadline_s: Optional[float] = None,
    silent_s: Optional[float] = None,
    pictures: bool = False,
) -> Generator[object, None, None]:
    """POST /v1/chat/completions with `body` (which sets "stream": true) and yield each event's decoded JSON (any
    JSON value: app.engine.remote.chunks checks its shape).

    Stop: when `cancel.is_set()`, the stream's socket is shut down (a watcher does it even while the server is
    silent) and the iterator ends quietly. `deadline_s` bounds the whole reply, and `silent_s` (silent_stream_s()
    by default) a stream of keep-alive comments without an event. A failure raises ServerError; after the first
    event, ConnectionDropped. `pictures`: the messages hold pictures, so a refusal of them is said as such."""
    httpx = _http()
    url = normalize_url(url)
    shown = display_url(url)
    started = False
    sockets = _Sockets()
    watch = _Watch(sockets, cancel, deadline_s)
    try:
        with _client(read_timeout_s, sockets) as client:
            with client.stream("POST", f"{url}/v1/chat/completions", json=body, headers=_headers(api_key)) as resp:
                if resp.status_code != 200:
                    error_body, _ = _read_capped(resp, MAX_ERROR_BODY_BYTES)
                    raise status_error(
                        url, resp.status_code, error_body, body.get("model", ""), bool(api_key), pictures
                    )
                if "text/html" in resp.headers.get("content-type", "").lower():
                    raise ServerError(
                        f"The server at {shown} answered with a web page, not an OpenAI-compatible "
                        "API; check the address (the API's base URL, such as http://host:8080)."
                    )
                # Comments (": keep-alive") keep a connection open but are no reply: past this, give up.
                quiet_limit_s = silent_stream_s() if silent_s is None else silent_s
                last_event = time.monotonic()
                for line in _lines(resp, shown):
                    if watch.stopped():
                        watch.raise_if_expired(shown, started)
                        return
                    if not line.startswith("data:"):
                        if time.monotonic() - last_event > quiet_limit_s:
                            cls = ConnectionDropped if started else ServerError
                            raise cls(silent_sentence(shown, quiet_limit_s, started))
                        continue  # comments, "event:" lines and the blank line between events
                    last_event = time.monotonic()
                    data = line[len("data:") :].strip()
                    if data == "[DONE]":
                        return
                    if not data:
                        continue
                    try:
                        event = json.loads(data)
                    except (ValueError, RecursionError):
                        raise ServerError(
                            f"The server at {shown} sent a malformed event (not JSON); the reply stops here."
                        ) from None
                    if isinstance(event, dict) and "error" in event and "choices" not in event:
                        raise ServerError(
                            f"The server at {shown} stopped the reply: "
                            f"{server_message(data.encode('utf-8', 'replace'))}"
                        )
                    started = True
                    yield event
                if watch.stopped():
                    watch.raise_if_expired(shown, started)
                    return
                if not started:
                    raise ServerError(f"The server at {shown} closed the stream without a reply.")
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        if watch.stopped():
            watch.raise_if_expired(shown, started)
            return  # the stream was shut down by Stop
        raise transport_error(url, exc, during_reply=started) from None
    finally:
        watch.done.set()


class _Watch:
    """Shuts the stream's sockets down when Stop is pressed or the reply's deadline passes (a thread of its own:
    the stream's thread may be blocked reading a silent server)."""

    def __init__(self, sockets: _Sockets, cancel, deadline_s: Optional[float]) -> None:
        self.done = threading.Event()
        self.expired = False
        self._cancel = cancel
        self._deadline_s = deadline_s
        self._sockets = sockets
        self._ends_at = time.monotonic() + deadline_s if deadline_s is not None else None
        if cancel is not None or deadline_s is not None:
            threading.Thread(target=self._run, name="stream stop watch", daemon=True).start()

    def stopped(self) -> bool:
        return (self._cancel is not None and self._cancel.is_set()) or self.expired

    def raise_if_expired(self, shown: str, started: bool) -> None:
        if self.expired and not (self._cancel is not None and self._cancel.is_set()):
            cls = ConnectionDropped if started else ServerError
            raise cls(
                f"The server at {shown} did not finish the reply within {self._deadline_s:.0f} s"
                + ("; the reply so far is kept." if started else ".")
            ) from None

    def _run(self) -> None:
        while not self.done.wait(CANCEL_POLL_S):
            if self._ends_at is not None and time.monotonic() > self._ends_at:
                self.expired = True
            if self.stopped():
                self._sockets.shut_down()
                return


def _lines(response, shown: str) -> Iterator[str]:
    """The body's lines as text (invalid UTF-8 replaced), none longer than MAX_LINE_BYTES. iter_raw: the body is
    read as sent (Accept-Encoding: identity asked for no compression; a compressed body is then malformed)."""
    pending = bytearray()
    for piece in response.iter_raw():
        pending += piece
        while True:
            end = pending.find(b"\n")
            if end < 0:
                break
            line = bytes(pending[:end])
            del pending[: end + 1]
            yield line.rstrip(b"\r").decode("utf-8", "replace")
        if len(pending) > MAX_LINE_BYTES:
            raise ServerError(
                f"The server at {shown} sent a malformed event (a line longer than "
                f"{MAX_LINE_BYTES >> 20} MB); the reply stops here."
            )
    if pending:
        yield bytes(pending).rstrip(b"\r").decode("utf-8", "replace")
