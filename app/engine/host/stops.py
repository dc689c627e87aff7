"""Which requests are to stop, shared by two processes: a flag per request, for requests answered side by side.

Every "should this request stop" is a flag here, each an `app.engine.protocol.CancelSignal`: a request's StopFlag
on a StopBoard (the API's requests), the UpToFlag of the window's own Stop, ANY_OF several flags, and NEVER.

An "up to" integer (every id up to it is stopped) is exact only while one request runs at a time: with several,
stopping the newest would stop the older ones beside it. A StopBoard keeps a slot per request id, modulo SLOTS:
the requests in flight at once (running, and waiting in the engine process's batch) are far fewer than SLOTS
apart, so two of them never share a slot.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:  # the window imports this module, and needs none of the engine's protocol at run time
    from app.engine.protocol import CancelSignal

SLOTS = 4096


class StopFlag:
    """`is_set()` and `set()` for one request of a StopBoard (any thread, either process)."""

    def __init__(self, board: "StopBoard", request_id: int):
        self._board = board
        self._request_id = request_id

    def is_set(self) -> bool:
        return self._board.is_stopped(self._request_id)

    def set(self) -> None:
        self._board.stop(self._request_id)


class StopBoard:
    """Made in the parent from a multiprocessing context, and passed to the child as a Process argument."""

    def __init__(self, context):
        self._ids = context.RawArray("q", SLOTS)
        self._all = context.RawValue("b", 0)

    def stop(self, request_id: int) -> None:
        self._ids[request_id % SLOTS] = request_id

    def stop_all(self) -> None:
        """Every request, now and later, is to stop (the process is being shut down)."""
        self._all.value = 1

    def is_stopped(self, request_id: int) -> bool:
        return bool(self._all.value) or self._ids[request_id % SLOTS] == request_id

    def flag(self, request_id: int) -> StopFlag:
        return StopFlag(self, request_id)


class UpToFlag:
    """The window's own Stop: every request id up to a shared "highest cancelled id" value is stopped. Exact because
    the window has one reply of its own in flight at a time (any thread, either process)."""

    def __init__(self, cancelled_up_to, request_id: int):
        self._shared = cancelled_up_to
        self._request_id = request_id

    def is_set(self) -> bool:
        return self._shared.value >= self._request_id

    def set(self) -> None:
        if self._shared.value < self._request_id:
            self._shared.value = self._request_id


class AnyOf:
    """Set when any of its flags is: the client went away (or Stop was pressed in the window), or had enough."""

    def __init__(self, *flags: Optional[CancelSignal]):
        self._flags = [flag for flag in flags if flag is not None]

    def is_set(self) -> bool:
        return any(flag.is_set() for flag in self._flags)


class _Never:
    def is_set(self) -> bool:
        return False


NEVER: "CancelSignal" = _Never()
