"""One HTTP client shim: httpx2 (the maintained httpx line, which huggingface_hub 2 brings) or httpx. And which
hosts are this machine (`is_loopback_host`), and what a host to listen on may be (`listen_host_problem`).

Both have the same API; which one is installed depends on the Python version (pyproject.toml). huggingface_hub may
use either (or requests, before 1.0), so code that talks through the Hub's session asks `module_of` the session
rather than assuming one.
"""

from __future__ import annotations

import ipaddress
import re
import sys
from types import ModuleType
from typing import Optional

_CLIENTS = ("httpx2", "httpx")


def http_client() -> ModuleType:
    """httpx2 where installed, else httpx; imported when first needed (the window imports its callers at start)."""
    try:
        import httpx2

        return httpx2
    except ImportError:  # pragma: no cover - which one is installed depends on the Python version
        import httpx

        return httpx


def module_of(session: object) -> ModuleType:
    """The HTTP library `session` belongs to (httpx2 or httpx), e.g. huggingface_hub's own client."""
    return sys.modules[type(session).__module__.split(".")[0]]


def is_network_error(exc: BaseException) -> bool:
    """A network-level failure (no connection, a timeout) of any HTTP library in use: httpx2, httpx or requests."""
    if isinstance(exc, (ConnectionError, TimeoutError)):
        return True
    for module_name in (*_CLIENTS, "requests"):
        module = sys.modules.get(module_name)
        if module is None:
            continue
        base = getattr(module, "TransportError", None) or getattr(module, "ConnectionError", None)
        if base is not None and isinstance(exc, base):
            return True
        timeout = getattr(module, "TimeoutException", None) or getattr(module, "Timeout", None)
        if timeout is not None and isinstance(exc, timeout):
            return True
    return False


def is_loopback_host(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 with or without brackets) is this machine: localhost,
    127.0.0.0/8 or ::1. The one rule for the API server's own address, the clients it lets in, and a server URL."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# A host name's labels (RFC 1123): letters, digits and inner hyphens, 63 characters each, 253 in all.
_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)")


def listen_host_problem(host: str) -> Optional[str]:
    """Why `host` cannot be an address to listen on (an IP address, or a host name such as localhost), in one
    sentence, or None. A value with spaces or shell characters is refused here, before it reaches a socket, a log
    line or a command a person might copy."""
    try:
        ipaddress.ip_address(host.strip("[]") if host.startswith("[") and host.endswith("]") else host)
        return None
    except ValueError:
        pass
    if 0 < len(host) <= 253 and all(_LABEL.fullmatch(label) for label in host.removesuffix(".").split(".")):
        return None
    return "The address must be a host name or an IP address, such as 127.0.0.1."
