"""Which requests are to stop, shared by two processes: a flag per request, for requests answered side by side.

An "up to" integer (every id up to it is stopped) is exact only while one request runs at a time: with several,
stopping the newest would stop the older ones beside it. A StopBoard keeps a slot per request id, modulo SLOTS:
the requests in flight at once (running, and waiting in the engine process's batch) are far fewer than SLOTS
apart, so two of them never share a slot.
"""

from __future__ import annotations

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
