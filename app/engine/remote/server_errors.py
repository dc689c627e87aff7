"""What a failure talking to a server says, in one sentence each: the errors, the server's URL as messages show it
(never its credentials), and the sentence for an HTTP status, a network failure or a silent stream."""

from __future__ import annotations

import json
from urllib.parse import urlsplit, urlunsplit

from app.common.http_client import http_client
from app.engine.errors import EngineError
from app.engine.remote.chunks import one_line

# The client's timeouts, which the sentences name.
CONNECT_TIMEOUT_S = 10.0
# How long the server may send nothing at all: the first token of a long prompt can take a while on a busy server.
READ_TIMEOUT_S = 120.0
# What a server answers a request whose pictures it does not take (its model cannot see, a picture too large or of
# a kind it does not read): said as a refusal of the pictures, with the server's own reason.
PICTURE_REFUSALS = (400, 413, 415, 422)
# llama-server answers 500 for a model started without its projector ("image input is not supported"): a 500 whose
# message speaks of pictures is taken as their refusal too.
PICTURE_WORDS = ("image", "picture", "vision", "multimodal", "mmproj")


def silent_sentence(shown: str, silent_s: float, started: bool) -> str:
    """What is said of a server that kept a stream open for `silent_s` and sent no token."""
    return f"The server at {shown} sent no token for {silent_s:g} s, only keep-alive comments or empty events; " + (
        "the reply so far is kept." if started else "it may be overloaded or stuck."
    )


class ServerError(EngineError):
    """The server could not be reached or refused the request; the message says which, in one sentence."""


class ConnectionDropped(ServerError):
    """The stream ended in the middle of a reply."""


def display_url(url: str) -> str:
    """`url` as messages show it: without user:password@ and without its query (`?api_key=...`): credentials are
    sent, never echoed."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return one_line(url.rpartition("@")[2].partition("?")[0], 200)
    return one_line(urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2], query="", fragment="")), 200)


def server_message(body: bytes) -> str:
    """The error text a server put in its JSON body ({"error": {"message": ...}} or {"error": "..."}), short."""
    text = body.decode("utf-8", "replace")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return one_line(text)
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        error = error.get("message") or error.get("detail") or ""
    if not isinstance(error, str):
        error = data.get("detail") if isinstance(data, dict) and isinstance(data.get("detail"), str) else ""
    return one_line(error)


def status_error(
    url: str, status: int, body: bytes, model: str = "", has_key: bool = False, pictures: bool = False
) -> ServerError:
    """One sentence for an HTTP error status from the server at `url` (`pictures`: the request held pictures)."""
    shown = display_url(url)
    said = server_message(body)
    said_part = f" (it said: {said})" if said else ""
    if status in (401, 403):
        if has_key:
            return ServerError(f"The server at {shown} refused the API key (HTTP {status}); check the key in Settings.")
        return ServerError(f"The server at {shown} needs an API key (HTTP {status}); add one in Settings.")
    lowered = said.lower()
    if model and (
        status == 404
        or "model" in lowered
        and ("not found" in lowered or "not exist" in lowered or "not loaded" in lowered or "unknown" in lowered)
    ):
        return ServerError(f'The server at {shown} has no model "{one_line(model)}" loaded (HTTP {status}){said_part}.')
    if pictures and (status in PICTURE_REFUSALS or (status == 500 and any(w in lowered for w in PICTURE_WORDS))):
        return ServerError(
            f"The server at {shown} refused the message with pictures (HTTP {status}{said_part}); if its "
            "model cannot see, choose one there that can, or remove the pictures to send the text."
        )
    if status == 503:
        return ServerError(
            f"The server at {shown} is not ready (HTTP 503, often still loading its model)"
            f"{said_part}; try again in a moment."
        )
    return ServerError(f"The server at {shown} answered HTTP {status}{said_part}.")


def transport_error(url: str, exc: Exception, during_reply: bool = False) -> ServerError:
    """One sentence for a network failure talking to `url`."""
    httpx = http_client()
    shown = display_url(url)
    if isinstance(exc, httpx.ConnectTimeout):
        return ServerError(
            f"The server at {shown} did not answer within {CONNECT_TIMEOUT_S:.0f} s; check the address and the network."
        )
    if isinstance(exc, httpx.ConnectError):
        return ServerError(f"Cannot reach the server at {shown}; check the address and that the server is running.")
    if isinstance(exc, (httpx.ReadTimeout, httpx.WriteTimeout, httpx.PoolTimeout)):
        what = "mid-reply" if during_reply else "after the request"
        cls = ConnectionDropped if during_reply else ServerError
        return cls(
            f"The server at {shown} sent nothing for {READ_TIMEOUT_S:.0f} s {what}; it may be overloaded. "
            + ("The reply so far is kept." if during_reply else "Try again later.")
        )
    if isinstance(exc, httpx.UnsupportedProtocol) or isinstance(exc, httpx.InvalidURL):
        return ServerError(f'"{shown}" is not a server address; use one like http://host:8080.')
    if during_reply:
        return ConnectionDropped(
            f"The connection to the server at {shown} dropped mid-reply; the reply so far is kept."
        )
    return ServerError(f"The connection to the server at {shown} failed ({type(exc).__name__}).")
