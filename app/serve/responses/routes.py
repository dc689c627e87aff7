"""POST /v1/responses (and /responses): OpenAI's Responses API, streamed as named server-sent events or whole.

A request goes the way every API's does (app.serve.job_flow): its body read and checked off the event loop, its
job queued, its records read as they come. While none comes for IN_PROGRESS_EVERY_S (a long prompt is being read),
a streamed reply says `response.in_progress`, so that an agent waiting on the stream does not give up on it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import AsyncIterator, Callable, Optional

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from app.serve.access import client_label
from app.serve.errors import BadRequest
from app.serve.field_types import parse_json_body
from app.serve.job_flow import IDLE, RunningJob, job_response, read_body, submit
from app.serve.jobs import JobFailed, JobQueue, JobStarted
from app.serve.replies import ReplyShaper, error_body
from app.serve.requests import ApiOptions
from app.serve.responses.replies import ResponseEvents
from app.serve.responses.requests import ResponsesRequest, parse_responses_request

# How long a streamed reply may go without an event before it says it is still being written. Codex gives up on a
# stream that is quiet for its idle timeout (minutes), and retries it.
IN_PROGRESS_EVERY_S = 10.0
FAILED = "The server failed while writing this response; its log has the details."


def responses_routes(
    options: ApiOptions, queue: JobQueue, denied: Callable[[Request], Optional[Response]], keys: tuple[bytes, ...]
) -> list[Route]:
    """The Responses API's routes for build_app; `denied` is its check of who may ask."""

    async def responses(request: Request) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        try:
            body = await read_body(request, options.limits.max_body_bytes)
            client = client_label(request.headers, keys)
            parsed = await run_in_threadpool(_parse, body, options, client)
            running = submit(parsed.chat, queue, options.limits.max_queued)
        except BadRequest as exc:
            return _error(exc.status, str(exc), exc.code)
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is there to read it

        def refuse(exc: BadRequest) -> Response:
            if parsed.chat.stream and exc.code:  # an agent reads the reason from the stream's last event
                events = ResponseEvents(parsed, ReplyShaper(parsed.chat))
                failure = [*events.start(), events.failed(str(exc), exc.code)]
                return StreamingResponse(_sent(failure), media_type="text/event-stream")
            return _error(exc.status, str(exc), exc.code)

        def events_of(first: JobStarted) -> ResponseEvents:
            shaper = ReplyShaper(
                parsed.chat, model=first.model, prompt_tokens=first.prompt_tokens, tool_format=first.tool_format
            )
            return ResponseEvents(parsed, shaper)

        def stream(first: JobStarted) -> Response:
            headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
            sent = _sse(_events(events_of(first), running, IN_PROGRESS_EVERY_S))
            return StreamingResponse(sent, media_type="text/event-stream", headers=headers)

        return await job_response(
            request,
            running,
            whole=lambda first: _whole(events_of(first), running),
            stream=stream if parsed.chat.stream else None,
            refuse=refuse,
        )

    return [Route("/v1/responses", responses, methods=["POST"]), Route("/responses", responses, methods=["POST"])]


def _parse(body: bytes, options: ApiOptions, client: str) -> ResponsesRequest:
    defaults = replace(options.defaults, client=client) if client else options.defaults
    return parse_responses_request(parse_json_body(body), options.limits, defaults)


def _error(status: int, message: str, code: str = "") -> JSONResponse:
    body = error_body(status, message)
    if code:
        body["error"]["code"] = code
    return JSONResponse(body, status_code=status)


async def _events(
    events: ResponseEvents, running: RunningJob, idle: Optional[float], failures: Optional[list[JobFailed]] = None
) -> AsyncIterator[dict]:
    """Every event of one reply, the first to the last; a reply that ends early is stopped. A failure's record is
    also added to `failures`, for a whole reply's status line."""
    shaper = events.shaper
    finished: Optional[FinishedEvent] = None
    try:
        for event in events.start():
            yield event
        async for record in running.records(idle=idle):
            if record is IDLE:
                yield events.alive()
            elif isinstance(record, RoundEvent):
                shaper.on_round(record)
            elif isinstance(record, TokenEvent):
                held = running.released(shaper, record)
                for event in events.on_chunks(shaper.chunks(held)) if held is not None else ():
                    yield event
            elif isinstance(record, FinishedEvent):
                finished = record
            elif isinstance(record, JobFailed):
                if failures is not None:
                    failures.append(record)
                yield events.failed(record.message, record.code or "server_error")
                return
        for event in events.on_chunks(shaper.chunks(shaper.flush(), last=True)):
            yield event
        for event in events.finish(finished):
            yield event
    finally:
        running.close(finished is not None)


async def _whole(events: ResponseEvents, running: RunningJob) -> Response:
    last: dict = {}
    failures: list[JobFailed] = []
    async for event in _events(events, running, None, failures):
        last = event
    if failures:
        return _error(failures[0].status, failures[0].message, failures[0].code)
    return JSONResponse(last["response"])


async def _sent(events: list[dict]) -> AsyncIterator[bytes]:
    for event in events:
        yield _frame(event)


async def _sse(events: AsyncIterator[dict]) -> AsyncIterator[bytes]:
    """The events as server-sent events named by their type, as OpenAI sends them."""
    try:
        async for event in events:
            yield _frame(event)
    except Exception as exc:  # a bug of ours mid-reply: the client hears it as an event, not as a cut stream
        print(
            f"SpecChat API: a streamed response failed: {type(exc).__name__}: {str(exc)[:200]!r}",
            file=sys.stderr,
            flush=True,
        )
        yield _frame({"type": "error", "code": "server_error", "message": FAILED, "sequence_number": 0})


def _frame(event: dict) -> bytes:
    data = json.dumps(event, ensure_ascii=False, separators=(",", ":"))
    return f"event: {event['type']}\ndata: {data}\n\n".encode("utf-8")
