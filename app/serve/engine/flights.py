"""API jobs sent to an engine process, kept by request id: one copy of the bookkeeping for every place the API's
HTTP side runs apart from the models (`specchat-cli serve`'s client, the window's API bridge).

The engine's answers (app.engine.host.wire's ReplyStarted, ReplyFailed, EngineEvents, ReplyEnded) are relayed to
the job they belong to; a client that goes away, or has what it wants (its stop string), reaches the engine process
through shared flags per request (app.engine.host.stops: the worker reads `gone` as its `api_gone`); when the engine
process dies, each job in flight gets one error with a sentence. No Qt, no pipe: only the transport differs
between its users. One thread only (the one that sends the jobs).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from app.engine.events import FinishedEvent, TokenEvent
from app.engine.host.stops import StopBoard
from app.engine.host.wire import EngineEvents, ReplyEnded, ReplyFailed, ReplyStarted
from app.serve.jobs import STOPPED, JobEnded, JobFailed, ServeJob, as_read, relay

# A reply whose client went away must end within this; else the engine process is stuck (in a chat template, in
# llama.cpp, in a grammar's conversion) and is replaced, as the window replaces its own.
STOP_GRACE_S = 3.0
# While a prompt is read, a stop is heard only between two of its chunks, and one chunk (512 tokens) of a large model
# on a slow CPU takes tens of seconds: a client that hangs up then is no sign of a stuck engine, and replacing the
# engine would lose the cache its retry reads on from (an agent's 20,000-token prompt read again).
READING_GRACE_S = 60.0
MAX_UNREAD = 16


def death_sentence(ended: str, doing: str) -> str:
    """The engine process's death in words: `ended` is how it ended (app.engine.child_process.how_it_ended),
    `doing` what it was doing ("while answering")."""
    return f"The engine stopped ({ended}) {doing}"


def restarting(sentence: str) -> str:
    """The one error each API request in flight gets when the engine process dies under it (`sentence`:
    death_sentence's)."""
    return f"{sentence}; it is restarting."


def unsendable_sentence(exc: Exception) -> str:
    """A request that cannot cross the pipe to the engine process (a bug of ours): it alone fails."""
    return f"The server failed while sending this request to its engine ({type(exc).__name__})."


@dataclass
class _InFlight:
    job: ServeJob
    finished: Optional[FinishedEvent] = None
    gone_at: Optional[float] = None  # when its client went away (time.monotonic), while the engine still answers
    stopped: bool = False  # the window's Stop ended it (its client, still there, hears why)
    reading: bool = False  # started (its prompt fits) and no token yet: its prompt is being read

    def grace_s(self) -> float:
        """How long after its client went away the reply may take to end before the engine counts as stuck."""
        return READING_GRACE_S if self.reading else STOP_GRACE_S


OnDone = Callable[[ServeJob, Optional[FinishedEvent]], None]


class ApiFlights:
    """The API jobs an engine process is answering, by request id. `gone` and `enough` are the shared boards
    (app.engine.host.stops) the engine process reads every round."""

    def __init__(self, gone: StopBoard, enough: StopBoard, on_done: Optional[OnDone] = None):
        self._gone, self._enough = gone, enough
        self.on_done = on_done  # called once the HTTP side has read each answered job (ServeJob.read)
        self._in_flight: dict[int, _InFlight] = {}
        # Answered jobs whose on_done waits until the HTTP side has read them, so that a reply ended by a stop
        # string is reported so; oldest first.
        self._unread: list[_InFlight] = []

    def __len__(self) -> int:
        return len(self._in_flight)

    def ids(self) -> list[int]:
        return sorted(self._in_flight)

    @property
    def waiting_to_report(self) -> bool:
        return bool(self._unread)

    def add(self, request_id: int, job: ServeJob) -> None:
        self._in_flight[request_id] = _InFlight(job)

    def fail(self, request_id: int, status: int, sentence: str) -> None:
        """End one job with an error (a request that could not be sent)."""
        flight = self._in_flight.pop(request_id, None)
        if flight is not None:
            flight.job.sink(JobFailed(status, sentence))
            flight.job.sink(JobEnded())

    def stop(self, request_id: int) -> None:
        """The window's Stop: the reply ends at the engine's next round, and its client hears why."""
        flight = self._in_flight.get(request_id)
        if flight is not None:
            flight.stopped = True
            self._gone.stop(request_id)

    def forward_stops(self) -> bool:
        """Pass on the clients that went away or have enough; True when a gone client's reply has not ended
        within STOP_GRACE_S (the engine process is stuck: the caller replaces it)."""
        now, overdue = time.monotonic(), False
        for request_id, flight in self._in_flight.items():
            if flight.job.cancel.is_set():
                self._gone.stop(request_id)
                if flight.gone_at is None:
                    flight.gone_at = now
                elif now - flight.gone_at > flight.grace_s():
                    overdue = True
            if flight.job.enough.is_set():
                self._enough.stop(request_id)
        return overdue

    def on_reply(self, message: object) -> bool:
        """Relay one of the engine's answers to its job; False when it belongs to no API job in flight."""
        if isinstance(message, EngineEvents):
            if not message.events or message.events[0].request_id not in self._in_flight:
                return False
            for event in message.events:
                if isinstance(event, TokenEvent):
                    self._in_flight[event.request_id].reading = False
                self._relay(event.request_id, event)
        elif isinstance(message, (ReplyStarted, ReplyFailed)):
            if message.request_id not in self._in_flight:
                return False
            self._in_flight[message.request_id].reading = isinstance(message, ReplyStarted)
            self._relay(message.request_id, message)
        elif isinstance(message, ReplyEnded):
            flight = self._in_flight.pop(message.request_id, None)
            if flight is None:
                return False
            if flight.stopped and flight.finished is None and not flight.job.cancel.is_set():
                flight.job.sink(JobFailed(503, STOPPED))
            flight.job.sink(JobEnded())
            self._unread.append(flight)
            self.report_read()
        else:
            return False
        return True

    def _relay(self, request_id: int, answer) -> None:
        flight = self._in_flight.get(request_id)
        if flight is not None:
            flight.finished = relay(flight.job, answer) or flight.finished

    def report_read(self, everything: bool = False) -> None:
        """on_done for the answered jobs the HTTP side has read, in order (every one when `everything`, and the
        oldest ones past MAX_UNREAD: a response that never started sets nothing)."""
        while self._unread and (
            everything
            or len(self._unread) > MAX_UNREAD
            or self._unread[0].job.read.is_set()
            or self._unread[0].job.cancel.is_set()
        ):
            flight = self._unread.pop(0)
            if self.on_done is not None:
                self.on_done(flight.job, as_read(flight.job, flight.finished) if flight.finished else None)

    def fail_all(self, status: int, sentence: str) -> None:
        """Every job in flight gets one error with `sentence` (the engine process died, or is closing)."""
        flights, self._in_flight = [self._in_flight[i] for i in sorted(self._in_flight)], {}
        for flight in flights:
            flight.job.sink(JobFailed(status, sentence))
            flight.job.sink(JobEnded())
            if self.on_done is not None:
                self.on_done(flight.job, None)
