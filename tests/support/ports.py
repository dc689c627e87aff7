"""A free TCP port on 127.0.0.1, for a test's server to listen on."""

from __future__ import annotations

import socket


def free_port() -> int:
    """A port nothing listens on now (the system's pick); a test's server binds it next."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
