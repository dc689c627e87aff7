"""Who may ask: web pages (their Origin), requests addressed to another name (their Host) and the API key.

A web page the user visits may send requests to this machine. The browser names the page's origin in `Origin`, so
a request from any page is refused, also from a page served on another port of this machine (another local
program's web UI, or a page it was tricked into serving): this server serves no pages, so no page of its own
ever asks. A page that renamed itself to a loopback address (DNS rebinding) still sends its own name in `Host`,
which a server listening on loopback refuses. Programs (editors, agents, scripts) send no `Origin` and pass.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional
from urllib.parse import urlsplit

from app.common.http_client import is_loopback_host

if TYPE_CHECKING:
    from starlette.requests import Request

DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Refusal:
    """Why a request is not answered: an HTTP status and one sentence."""

    status: int
    message: str


def _host_and_port(text: str) -> Optional[tuple[str, int]]:
    """(hostname, port) of an origin ("http://host[:port]") or a Host header ("host[:port]", read as http), or None
    when it is malformed (a bad IPv6 literal, a port that is not a number from 0 to 65535)."""
    try:
        parts = urlsplit(text if "://" in text else f"http://{text}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if not host:
        return None
    return host, port if port is not None else DEFAULT_PORTS.get(parts.scheme, 0)


def refusal(
    headers: Mapping[str, str], server_port: int, local_only: bool, keys: tuple[bytes, ...]
) -> Optional[Refusal]:
    """Why a request with these `headers` must not reach the models, or None. `server_port` is the port it came
    in on; `local_only`: the server listens on loopback; `keys`: those a client may send (none: no key asked)."""
    origin = headers.get("origin")
    if origin is not None:
        page = _host_and_port(origin) if origin != "null" else ("", 0)
        if page is None:
            return Refusal(400, "The request's Origin header is malformed.")
        if not is_loopback_host(page[0]) or page[1] != server_port:
            return Refusal(403, "Requests from web pages are refused, also from pages on other ports of this machine.")
    host = headers.get("host")
    if host:
        named = _host_and_port(host)
        if named is None:
            return Refusal(400, "The request's Host header is malformed.")
        if local_only and not is_loopback_host(named[0]):
            return Refusal(403, "This server answers requests addressed to this machine only.")
    if not keys:
        return None
    token = _sent_key(headers)
    # compare_digest takes as long whatever the first differing byte, and every key is compared: a key cannot be
    # guessed by timing.
    matches = [hmac.compare_digest(token or b"", key) for key in keys]
    if token is None or not any(matches):
        return Refusal(401, 'This server needs its API key, sent as "Authorization: Bearer KEY" or "x-api-key: KEY".')
    return None


def request_refusal(request: "Request", local_only: bool, keys: tuple[bytes, ...]) -> Optional[Refusal]:
    """`refusal` for a Starlette request, on the port it came in on."""
    port = request.scope.get("server", ("", 0))[1] or 0
    return refusal(request.headers, port, local_only, keys)


def client_label(headers: Mapping[str, str], keys: tuple[bytes, ...]) -> str:
    """Which client a request that `refusal` let in is, for GenerationConfig.client: "" on a server with one key or
    none (its clients are one client), else a label of the key it sent. The label is a hash, so no key is written
    where the label goes (the names of kept states and history books)."""
    token = _sent_key(headers)
    if len(keys) < 2 or token is None:
        return ""
    return hashlib.sha256(b"specchat-api-client\0" + token).hexdigest()[:16]


def _sent_key(headers: Mapping[str, str]) -> Optional[bytes]:
    """The key a client sent: OpenAI's clients send "Authorization: Bearer KEY", Anthropic's "x-api-key: KEY"."""
    scheme, _, token = headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer":
        return token.strip().encode("utf-8")
    key = headers.get("x-api-key")
    return key.strip().encode("utf-8") if key is not None else None
