"""Pictures named by an http(s) URL fetched for one request (serve --fetch-image-urls), on the event loop.

A server that fetches what a client names reaches whatever that client points it at, this machine's own services
and its private network included, and its sentences would tell that client which ports there are open. So each hop
(the URL, then each redirect, at most MAX_REDIRECTS) has its host resolved and every address checked: loopback,
link-local, private and other non-public addresses are refused, before any connection, with one sentence that says
nothing of what listens there, unless the person named the host in serve --image-url-hosts. The connection then goes
to the address that was checked (the host name still in the Host header and TLS), not to a second lookup's answer.

A request's pictures share one deadline (ApiLimits.image_fetch_s), whatever a host sends or how slowly: a host that
drips a byte a second cannot hold a request longer. Fetching runs on the event loop (async httpx), never in the
thread pool that reads request bodies, so slow hosts cannot keep other clients' requests from being read; the
caller cancels it when its client goes away (job_flow.unless_gone).
"""

from __future__ import annotations

import asyncio
import functools
import ipaddress
import socket
import ssl
from dataclasses import replace
from typing import Any, Iterable

from app.common.http_client import http_client
from app.engine.image_files import MAX_IMAGE_BYTES, MAX_IMAGES
from app.serve.completions.requests import ApiRequest
from app.serve.errors import BadRequest
from app.serve.pictures.parts import PictureUrl, picture_part
from app.serve.requests import ChatRequest

MAX_REDIRECTS = 5  # each one checked as the first hop is


def picture_urls(chat: ApiRequest) -> list[PictureUrl]:
    """The pictures `chat` names by URL, each once, in order."""
    if not isinstance(chat, ChatRequest):
        return []
    found = (part.get("image") for message in chat.messages for part in _parts(message))
    return list(dict.fromkeys(p for p in found if isinstance(p, PictureUrl)))


async def fetch_pictures(chat: ApiRequest, hosts: Iterable[str], deadline_s: float) -> ApiRequest:
    """`chat` with each picture named by URL fetched and checked; `hosts`: the names that may lead to non-public
    addresses. All of them within `deadline_s`. Raises BadRequest with one sentence."""
    wanted = picture_urls(chat)
    if not wanted or not isinstance(chat, ChatRequest):
        return chat
    if len(wanted) > MAX_IMAGES:
        raise BadRequest(f"The request holds {len(wanted)} pictures; at most {MAX_IMAGES} are read at once.")
    allowed = frozenset(_host_key(host) for host in hosts)
    httpx = http_client()
    # No timeout of httpx's own: the one deadline below bounds every lookup, connect and read. No proxies from
    # the environment: a proxy would connect to whatever address it resolves, unchecked.
    async with httpx.AsyncClient(
        timeout=None, follow_redirects=False, trust_env=False, verify=_tls_context()
    ) as client:
        tasks = [asyncio.ensure_future(_fetch(client, picture, allowed)) for picture in wanted]
        try:
            done, pending = await asyncio.wait(tasks, timeout=deadline_s, return_when=asyncio.FIRST_EXCEPTION)
            for task in tasks:  # the first failure, in the request's order
                if task in done and task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
            if pending:
                late = wanted[tasks.index(next(t for t in tasks if t in pending))]
                raise BadRequest(
                    f"{late.where} names a picture at {late.shown}, which did not arrive within {deadline_s:g} s "
                    "(the time a request's pictures have in all)."
                )
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)  # closed before the client closes
    fetched = {picture: task.result() for picture, task in zip(wanted, tasks)}
    messages = tuple(
        {**m, "content": [fetched.get(p.get("image"), p) for p in m["content"]]} if _parts(m) else m
        for m in chat.messages
    )
    return replace(chat, messages=messages)


@functools.cache
def _tls_context() -> ssl.SSLContext:
    """One TLS context for every fetch: reading the certificates again for each request would hold the event loop."""
    return http_client().create_ssl_context(trust_env=False)


def _parts(message: dict) -> list[dict]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _host_key(host: str) -> str:
    """A host as the allow-list compares it: lower case, without IPv6 brackets or a final dot."""
    return host.strip().strip("[]").rstrip(".").lower()


async def _fetch(client: Any, picture: PictureUrl, allowed: frozenset[str]) -> dict[str, Any]:
    """One picture's part, following up to MAX_REDIRECTS redirects, each hop's addresses checked."""
    httpx = http_client()
    try:
        url = httpx.URL(picture.url)
        for _ in range(MAX_REDIRECTS + 1):
            address = await _checked_address(url, allowed, picture)
            # identity: pictures are compressed already, and the size cap then counts what arrives.
            request = client.build_request(
                "GET",
                url.copy_with(host=address),
                headers={"Host": url.netloc.decode("ascii"), "Accept-Encoding": "identity"},
                extensions={"sni_hostname": url.host} if url.scheme == "https" else {},
            )
            response = await client.send(request, stream=True)
            try:
                if response.is_redirect:
                    url = url.join(response.headers.get("location", ""))
                    if url.scheme not in ("http", "https"):
                        raise BadRequest(f"{_named(picture)}, which redirects to a URL that is not http(s).")
                    continue
                if response.status_code != 200:
                    raise BadRequest(f"{_named(picture)}, which answered HTTP {response.status_code}.")
                return picture_part(await _body(response, picture), picture.where)
            finally:
                await response.aclose()
        raise BadRequest(f"{_named(picture)}, which redirects more than {MAX_REDIRECTS} times.")
    except (httpx.HTTPError, httpx.InvalidURL, OSError, UnicodeError) as exc:
        raise BadRequest(f"{_named(picture)}, which could not be fetched ({type(exc).__name__}).") from None


async def _body(response: Any, picture: PictureUrl) -> bytes:
    data = bytearray()
    async for chunk in response.aiter_bytes():
        data += chunk
        if len(data) > MAX_IMAGE_BYTES:
            raise BadRequest(
                f"{_named(picture)} of over {MAX_IMAGE_BYTES // 2**20} MiB; pictures of up to that are read."
            )
    return bytes(data)


async def _checked_address(url: Any, allowed: frozenset[str], picture: PictureUrl) -> str:
    """The address to connect to for `url`'s host: every address it resolves to is public, or the host is allowed.
    Raises BadRequest: a refused address gets the same sentence whatever listens there (nothing was asked)."""
    if not url.host:
        raise BadRequest(f"{_named(picture)}, which names no host.")
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(url.host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise BadRequest(f"{_named(picture)}, whose host could not be found.") from None
    addresses = [str(info[4][0]) for info in infos]
    if _host_key(url.host) not in allowed and not all(_public(address) for address in addresses):
        raise BadRequest(
            f"{_named(picture)}, which leads to an address this server does not fetch from (this machine or a "
            "private network; serve --image-url-hosts names hosts it may fetch from)."
        )
    return addresses[0]


def _public(address: str) -> bool:
    """Whether `address` is on the public internet: not loopback, link-local, private, shared, reserved or
    multicast (an IPv4 address written as IPv6 is judged as IPv4)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def _named(picture: PictureUrl) -> str:
    return f"{picture.where} names a picture at {picture.shown}"
