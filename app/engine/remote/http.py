"""Talking to an OpenAI-compatible server (llama.cpp's llama-server, vLLM, LM Studio, Ollama, ...): its model list
and streamed chat completions (server-sent events), with every failure turned into one sentence a person can act on.

The API key is a secret: it travels only in the Authorization header and is never put in a message or a log line.
HTTP goes through httpx2 (the maintained httpx line huggingface_hub 2 depends on), or httpx where only that is
installed; both have the same API.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Iterator, Optional

from app.common.http_client import http_client
from app.engine.errors import EngineError, ModelLoadError

_http = http_client  # the window imports this module at start: the client is imported when first needed

CONNECT_TIMEOUT_S = 10.0
# How long the server may send nothing at all: the first token of a long prompt can take a while on a busy server.
READ_TIMEOUT_S = 120.0
# How often a reply's stream looks at the Stop flag while the server is silent.
CANCEL_POLL_S = 0.05


class ServerError(EngineError):
    """The server could not be reached or refused the request; the message says which, in one sentence."""


class ConnectionDropped(ServerError):
    """The stream ended in the middle of a reply."""


@dataclass(frozen=True)
class ServerModel:
    """One entry of /v1/models. `owned_by` is "llamacpp" for llama.cpp's llama-server."""

    id: str
    owned_by: str = ""


def normalize_url(url: str) -> str:
    """The server's base URL without a trailing slash or a trailing /v1 ("http://host:8080")."""
    url = url.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    if "://" not in url:
        url = "http://" + url
    return url


def _headers(api_key: Optional[str]) -> dict:
    headers = {"Accept": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


# trust_env=False: a server is reached directly, never through the proxy the environment names for the internet.
def _timeout(read_timeout_s: float):
    httpx = _http()
    return httpx.Timeout(connect=CONNECT_TIMEOUT_S, read=read_timeout_s, write=CONNECT_TIMEOUT_S,
                         pool=CONNECT_TIMEOUT_S)


def _server_message(body: bytes) -> str:
    """The error text a server put in its JSON body ({"error": {"message": ...}} or {"error": "..."}), short."""
    try:
        data = json.loads(body.decode("utf-8", "replace"))
    except ValueError:
        text = body.decode("utf-8", "replace").strip()
    else:
        error = data.get("error", data) if isinstance(data, dict) else data
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or ""
        text = str(error or (data.get("detail") if isinstance(data, dict) else "") or "").strip()
    text = " ".join(text.split())
    return text[:200] + ("…" if len(text) > 200 else "")


def status_error(url: str, status: int, body: bytes, model: str = "", has_key: bool = False) -> ServerError:
    """One sentence for an HTTP error status from the server at `url`."""
    said = _server_message(body)
    said_part = f" (it said: {said})" if said else ""
    if status in (401, 403):
        if has_key:
            return ServerError(f"The server at {url} refused the API key (HTTP {status}); check the key in "
                               "Settings.")
        return ServerError(f"The server at {url} needs an API key (HTTP {status}); add one in Settings.")
    lowered = said.lower()
    if model and (status == 404 or "model" in lowered and ("not found" in lowered or "not exist" in lowered
                                                           or "not loaded" in lowered or "unknown" in lowered)):
        return ServerError(f"The server at {url} has no model \"{model}\" loaded (HTTP {status}){said_part}.")
    if status == 503:
        return ServerError(f"The server at {url} is not ready (HTTP 503, often still loading its model){said_part}; "
                           "try again in a moment.")
    return ServerError(f"The server at {url} answered HTTP {status}{said_part}.")


def transport_error(url: str, exc: Exception, during_reply: bool = False) -> ServerError:
    """One sentence for a network failure talking to `url`."""
    httpx = _http()
    if isinstance(exc, httpx.ConnectTimeout):
        return ServerError(f"The server at {url} did not answer within {CONNECT_TIMEOUT_S:.0f} s; check the address "
                           "and the network.")
    if isinstance(exc, httpx.ConnectError):
        return ServerError(f"Cannot reach the server at {url}; check the address and that the server is running.")
    if isinstance(exc, (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout)):
        what = "mid-reply" if during_reply else "after the request"
        cls = ConnectionDropped if during_reply else ServerError
        return cls(f"The server at {url} sent nothing for {READ_TIMEOUT_S:.0f} s {what}; it may be overloaded. "
                   + ("The reply so far is kept." if during_reply else "Try again later."))
    if isinstance(exc, httpx.UnsupportedProtocol) or isinstance(exc, httpx.InvalidURL):
        return ServerError(f"\"{url}\" is not a server address; use one like http://host:8080.")
    if during_reply:
        return ConnectionDropped(f"The connection to the server at {url} dropped mid-reply; the reply so far is kept.")
    return ServerError(f"The connection to the server at {url} failed ({type(exc).__name__}).")


def list_models(url: str, api_key: Optional[str] = None, timeout_s: float = CONNECT_TIMEOUT_S) -> list[ServerModel]:
    """The models the server offers (GET /v1/models). Raises ServerError."""
    httpx = _http()
    url = normalize_url(url)
    try:
        with httpx.Client(timeout=_timeout(timeout_s), trust_env=False) as client:
            response = client.get(f"{url}/v1/models", headers=_headers(api_key))
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise transport_error(url, exc) from None
    if response.status_code != 200:
        raise status_error(url, response.status_code, response.content, has_key=bool(api_key))
    try:
        data = response.json()
        entries = data.get("data", []) if isinstance(data, dict) else []
        return [ServerModel(str(e["id"]), str(e.get("owned_by") or "")) for e in entries
                if isinstance(e, dict) and e.get("id")]
    except (ValueError, TypeError, KeyError):
        raise ServerError(f"The server at {url} did not answer /v1/models with a model list; is it an "
                          "OpenAI-compatible server?") from None


def server_props(url: str, api_key: Optional[str] = None) -> dict:
    """llama-server's /props (its context size, among others); {} when the server has none."""
    httpx = _http()
    url = normalize_url(url)
    try:
        with httpx.Client(timeout=_timeout(CONNECT_TIMEOUT_S), trust_env=False) as client:
            response = client.get(f"{url}/props", headers=_headers(api_key))
        return response.json() if response.status_code == 200 else {}
    except (httpx.HTTPError, httpx.InvalidURL, ValueError):
        return {}


def check_model(url: str, model: str, api_key: Optional[str] = None) -> ServerModel:
    """The server's entry for `model`; ModelLoadError naming what it offers when it has no such model."""
    models = list_models(url, api_key)
    for entry in models:
        if entry.id == model:
            return entry
    offered = ", ".join(m.id for m in models[:8]) or "none"
    raise ModelLoadError(f"The server at {normalize_url(url)} has no model \"{model}\"; it offers: {offered}.")


def stream_chat(url: str, body: dict, api_key: Optional[str], cancel=None,
                read_timeout_s: float = READ_TIMEOUT_S) -> Iterator[dict]:
    """POST /v1/chat/completions with `body` (which sets "stream": true) and yield each event's JSON object.

    Stop: when `cancel.is_set()`, the stream is closed (a watcher closes it even while the server is silent) and
    the iterator ends quietly. A failure raises ServerError; after the first event, ConnectionDropped."""
    httpx = _http()
    url = normalize_url(url)
    started = False
    done = threading.Event()
    try:
        with httpx.Client(timeout=_timeout(read_timeout_s), trust_env=False) as client:
            with client.stream("POST", f"{url}/v1/chat/completions", json=body, headers=_headers(api_key)) as resp:
                if resp.status_code != 200:
                    raise status_error(url, resp.status_code, resp.read(), body.get("model", ""), bool(api_key))
                if cancel is not None:
                    _close_on_cancel(resp, cancel, done)
                for line in resp.iter_lines():
                    if cancel is not None and cancel.is_set():
                        return
                    if not line.startswith("data:"):
                        continue  # comments, "event:" lines and the blank line between events
                    data = line[len("data:"):].strip()
                    if data == "[DONE]":
                        return
                    try:
                        event = json.loads(data)
                    except ValueError:
                        continue
                    if isinstance(event, dict) and "error" in event and "choices" not in event:
                        raise ServerError(f"The server at {url} stopped the reply: "
                                          f"{_server_message(data.encode())}")
                    started = True
                    yield event
                if not started:
                    raise ServerError(f"The server at {url} closed the stream without a reply.")
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        if cancel is not None and cancel.is_set():
            return  # the stream was closed by Stop
        raise transport_error(url, exc, during_reply=started) from None
    finally:
        done.set()


def _close_on_cancel(response, cancel, done: threading.Event) -> None:
    """Close `response` from another thread as soon as Stop is pressed: iter_lines may be waiting on a silent
    server, and Stop must not wait for its next byte."""

    def watch() -> None:
        while not done.wait(CANCEL_POLL_S):
            if cancel.is_set():
                try:
                    response.close()
                except Exception:
                    pass
                return

    threading.Thread(target=watch, name="stream stop watch", daemon=True).start()
