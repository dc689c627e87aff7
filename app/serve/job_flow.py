"""One request's way through the server, whatever API it came by: its body read, its job queued, its first record
awaited, and the engine's records handed on until the job ends.

Each API (OpenAI's chat and completions here; others beside them) reads its own body into an ApiRequest and shapes
the records into its own responses; what lies between is here, once. Refusals are BadRequest (status and one
sentence), which each API writes in its own error shape.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import AsyncIterator, Awaitable, Callable, Optional, TypeVar

from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response

from app.engine.events import TokenEvent
from app.serve.completions.requests import ApiRequest
from app.serve.errors import BadRequest

from app.serve.replies import HeldToken, ReplyShaper
from app.serve.jobs import JobEnded, JobFailed, JobQueue, JobStarted, ServeJob


class Idle:
    """Handed on in place of a record when none came for `idle` seconds: a streamed reply says it is alive."""


IDLE = Idle()


async def read_body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 past `limit` bytes (also when a chunked body never says its length)."""
    too_large = BadRequest(f"The request is larger than this server accepts ({limit // 1024} KiB).", 413)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise too_large
    parts, size = [], 0
    async for part in request.stream():
        size += len(part)
        if size > limit:
            raise too_large
        parts.append(part)
    return b"".join(parts)


async def client_gone(request: Request) -> None:
    """Returns (after the body was read) once the client has gone away."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


async def cancel_on_disconnect(request: Request, job: ServeJob) -> None:
    """Waits (after the body was read) for the client to go away, and cancels its job when it does."""
    await client_gone(request)
    job.cancel.set()


Result = TypeVar("Result")


async def unless_gone(request: Request, work: Awaitable[Result]) -> Result:
    """`work`'s result; when the client goes away first, `work` is cancelled and ClientDisconnect raised."""
    task = asyncio.ensure_future(work)
    watcher = asyncio.ensure_future(client_gone(request))
    try:
        await asyncio.wait((task, watcher), return_when=asyncio.FIRST_COMPLETED)
    finally:
        watcher.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)  # its connections closed before we answer
    if task.cancelled():
        raise ClientDisconnect()
    return task.result()


@dataclass
class RunningJob:
    """A queued job and the records its sink brings back to the event loop."""

    job: ServeJob
    inbox: asyncio.Queue
    _first: Optional[asyncio.Future] = field(default=None, repr=False)

    async def started(self) -> JobStarted:
        """Its JobStarted, the same to every caller; a job that failed or was cancelled first is raised as a
        BadRequest. A caller that stops waiting (a timeout) leaves the outcome for the next one."""
        if self._first is None:
            self._first = asyncio.ensure_future(self._first_record())
        return await asyncio.shield(self._first)

    async def starts_within(self, seconds: float) -> bool:
        """Whether the job started, or failed, within `seconds`; started() then says which at once."""
        try:
            await asyncio.wait_for(self.started(), seconds)
        except asyncio.TimeoutError:
            return False
        except BadRequest:
            pass
        return True

    async def _first_record(self) -> JobStarted:
        while True:
            first = await self.inbox.get()
            if isinstance(first, JobStarted):
                return first
            if isinstance(first, JobFailed):
                raise BadRequest(first.message, first.status, first.code)
            if isinstance(first, JobEnded):
                raise BadRequest("The request was cancelled before it started.", 503)

    async def records(self, idle: Optional[float] = None) -> AsyncIterator[object]:
        """The engine's records after JobStarted, JobFailed among them, until JobEnded (not handed on); IDLE
        whenever none came for `idle` seconds."""
        while True:
            if idle is None:
                record = await self.inbox.get()
            else:
                try:
                    record = await asyncio.wait_for(self.inbox.get(), idle)
                except asyncio.TimeoutError:
                    yield IDLE
                    continue
            if isinstance(record, JobEnded):
                return
            yield record

    def released(self, shaper: ReplyShaper, record: TokenEvent) -> Optional[list[HeldToken]]:
        """What `shaper` lets out for one token; None for a token in flight after a stop string ended the reply.
        The stop string's token tells the engine the rest is not wanted (the reply's totals still come)."""
        if shaper.stopped_by_string:
            return None
        held = shaper.on_token(record)
        if shaper.stopped_by_string:
            self.job.enough.set()
        return held

    def close(self, finished: bool) -> None:
        """The HTTP side has read all it will: a reply that did not finish is stopped within one round."""
        if not finished:
            self.job.cancel.set()
        self.job.read.set()


async def start_or_idle(running: RunningJob, idle: float) -> AsyncIterator[JobStarted | Idle]:
    """IDLE every `idle` seconds while the job waits for its turn, then its JobStarted; a job that fails or is
    cancelled first is raised as a BadRequest (RunningJob.started)."""
    started = asyncio.ensure_future(running.started())
    try:
        while not (await asyncio.wait({started}, timeout=idle))[0]:
            yield IDLE
        yield started.result()
    finally:
        started.cancel()  # only this wait: the job's outcome stays with it


def submit(chat: ApiRequest, queue: JobQueue, max_queued: int) -> RunningJob:
    """Puts `chat` in line; a full line is a 503 BadRequest. Call on the event loop."""
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue = asyncio.Queue()

    def sink(record: object) -> None:  # on the engine's thread
        try:
            loop.call_soon_threadsafe(inbox.put_nowait, record)
        except RuntimeError:  # the event loop is gone: nobody is listening any more
            job.cancel.set()

    job = ServeJob(chat, sink)
    if not queue.submit(job):
        raise BadRequest(f"The server is busy ({max_queued} requests are waiting); try again shortly.", 503)
    return RunningJob(job, inbox)


async def job_response(
    request: Request,
    running: RunningJob,
    whole: Callable[[JobStarted], Awaitable[Response]],
    stream: Optional[Callable[[JobStarted], Response]],
    refuse: Callable[[BadRequest], Response],
) -> Response:
    """The response to a queued job: `refuse(...)` when it fails before it starts; once it starts, the streamed
    response `stream` makes (it watches for the client's going away itself), or with no `stream`, `whole(...)`,
    while a client that goes away cancels the job."""
    watcher = asyncio.create_task(cancel_on_disconnect(request, running.job))
    streaming = False
    try:
        try:
            started = await running.started()
        except BadRequest as exc:
            return refuse(exc)
        if stream is None:
            return await whole(started)
        response = stream(started)
        streaming = True
    finally:
        watcher.cancel()  # streaming: Starlette's response watches for the client's going away from here on
        if not streaming:
            running.job.read.set()
    return response
