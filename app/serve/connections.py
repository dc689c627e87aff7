"""The server's connections, bounded: how many may be open, how long a request's head and body may take to arrive,
and how long a connection may sit idle.

uvicorn caps a request head's size (h11) and closes a connection that stays idle after a response
(`timeout_keep_alive`), but it keeps for ever a connection that never completes a request, and its
`limit_concurrency` counts idle connections too: a few hundred sockets that send nothing, or a byte a second (as
slowloris does), would turn well-behaved clients away with a 503, or, past the process's file limit, leave them
waiting. So the server runs uvicorn's own h11 protocol with three additions:

- a deadline for a request's head (request line and headers), counted from the connection's start or the previous
  response's end, however many bytes trickle in meanwhile;
- a deadline for its body, counted from the head, answered with a 408;
- a connection limit that makes room: when one more connection comes, the one that has waited longest for a head
  is closed (an idle client loses a connection it can open again; a well-behaved one sends its request at once).
  Only when every open connection is in the middle of a request is the newcomer refused, with a 503.

The protocol runs on the server's event loop thread only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Optional

from app.serve.replies import error_body


@dataclass(frozen=True)
class ConnectionLimits:
    """How many connections one server keeps open, and how long each may take."""

    max_connections: int = 64
    head_timeout_s: float = 10.0  # the request line and headers, from connect (or the last response's end)
    body_timeout_s: float = 60.0  # the body, from the end of the head (4 MiB at about 0.5 Mbit/s)
    idle_timeout_s: int = 5  # a kept-alive connection with nothing sent after a response (uvicorn's own timer)


def _raw_response(status: int, reason: str, message: str) -> bytes:
    """A whole HTTP/1.1 error response, written straight to a connection that is closed right after."""
    body = json.dumps(error_body(status, message)).encode("utf-8")
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
        "connection: close\r\n\r\n"
    )
    return head.encode("ascii") + body


BUSY = _raw_response(503, "Service Unavailable", "The server has too many connections open; try again shortly.")


def guarded_protocol(limits: ConnectionLimits) -> type:
    """uvicorn's h11 protocol class with `limits` (pass it as uvicorn.Config's `http`)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    late_body = _raw_response(
        408, "Request Timeout", f"The request's body did not arrive within {limits.body_timeout_s:g} s."
    )

    class GuardedH11Protocol(H11Protocol):
        _head_timer = None
        _body_timer = None
        _seen_cycle = None
        _waiting_since = 0.0

        def connection_made(self, transport) -> None:
            super().connection_made(transport)
            self._await_head()
            self._make_room()

        def connection_lost(self, exc: Optional[Exception]) -> None:
            for timer in (self._head_timer, self._body_timer):
                if timer is not None:
                    timer.cancel()
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            cycle = self.cycle
            if cycle is not None and cycle is not self._seen_cycle:  # a new request's head has arrived
                self._seen_cycle = cycle
                if self._head_timer is not None:
                    self._head_timer.cancel()
                    self._head_timer = None
                if cycle.more_body:
                    self._body_timer = self.loop.call_later(limits.body_timeout_s, self._body_late, cycle)

        def on_response_complete(self) -> None:
            if self._body_timer is not None:
                self._body_timer.cancel()
                self._body_timer = None
            self._await_head()  # first: a pipelined request that super() reads at once cancels it again
            super().on_response_complete()

        # -- the additions ----------------------------------------------------------------------------------

        def waiting_for_head(self) -> bool:
            return self.cycle is None or self.cycle.response_complete

        def _await_head(self) -> None:
            if self._head_timer is not None:
                self._head_timer.cancel()
            self._waiting_since = self.loop.time()
            self._head_timer = self.loop.call_later(limits.head_timeout_s, self._head_late)

        def _head_late(self) -> None:
            self._head_timer = None
            if self.waiting_for_head():
                self.transport.close()

        def _body_late(self, cycle) -> None:
            self._body_timer = None
            if cycle is self.cycle and cycle.more_body and not cycle.response_started:
                self.transport.write(late_body)
                self.transport.close()

        def _make_room(self) -> None:
            others = [c for c in self.connections if c is not self and not c.transport.is_closing()]
            excess = len(others) + 1 - limits.max_connections
            if excess <= 0:
                return
            idle = sorted(
                (c for c in others if isinstance(c, GuardedH11Protocol) and c.waiting_for_head()),
                key=lambda c: c._waiting_since,
            )
            for connection in idle[:excess]:
                connection.transport.close()
            if len(idle) < excess:
                self.transport.write(BUSY)
                self.transport.close()

    return GuardedH11Protocol
