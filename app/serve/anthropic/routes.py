"""Anthropic's Messages API routes: POST /v1/messages (streamed or whole) and POST /v1/messages/count_tokens.

They run as OpenAI's do (app.serve.job_flow: the body read, the job queued, its records handed on); refusals are in
Anthropic's error shape, over HTTP before a stream starts and as an `error` event after. A stream starts (its
headers and message_start) as soon as the engine takes the job, and while the prompt is read, which on a slow
machine takes minutes, a `ping` event goes out every PING_S seconds, so a client's idle limit never ends it.
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from typing import cast, AsyncIterator, Optional

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from app.common.http_client import is_loopback_host
from app.serve.access import client_label, request_refusal
from app.serve.anthropic.replies import MessageShaper, error_body
from app.serve.anthropic.requests import parse_messages_request
from app.serve.errors import BadRequest
from app.serve.field_types import parse_json_body
from app.serve.job_flow import IDLE, RunningJob, job_response, read_body, submit, unless_gone
from app.serve.pictures.fetch import fetch_pictures, picture_urls
from app.serve.jobs import JobFailed, JobQueue, JobStarted
from app.serve.replies import ReplyShaper
from app.serve.requests import ApiOptions, ChatRequest

# Seconds without an event before a stream sends a ping (Anthropic's own pings come about this often).
PING_S = 10.0
OUR_FAULT = "The server failed while answering this request; its log has the details."


def error_response(status: int, message: str) -> JSONResponse:
    return JSONResponse(error_body(status, message), status_code=status)


def _event(name: str, data: dict) -> bytes:
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"event: {name}\ndata: {text}\n\n".encode("utf-8")


def anthropic_routes(options: ApiOptions, queue: JobQueue) -> list[Route]:
    """The routes, for app.serve.http_app.build_app."""
    keys = tuple(key.encode("utf-8") for key in options.keys)
    local_only = is_loopback_host(options.host)

    async def start(request: Request, count_only: bool) -> tuple[ChatRequest, RunningJob] | Response:
        refused = request_refusal(request, local_only, keys)
        if refused is not None:
            return error_response(refused.status, refused.message)
        try:
            body = await read_body(request, options.limits.max_body_bytes)
            client = client_label(request.headers, keys)
            chat = await run_in_threadpool(_parse, body, options, client, count_only)
            if picture_urls(chat):
                limits = options.limits
                fetched = await unless_gone(request, fetch_pictures(chat, limits.image_url_hosts, limits.image_fetch_s))
                chat = cast(ChatRequest, fetched)  # a chat request stays one with its pictures fetched
            return chat, submit(chat, queue, options.limits.max_queued)
        except BadRequest as exc:
            return error_response(exc.status, str(exc))
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is there to read it

    async def count_tokens(request: Request) -> Response:
        return await answer(request, count_only=True)

    async def messages(request: Request) -> Response:
        return await answer(request, count_only=False)

    async def answer(request: Request, count_only: bool) -> Response:
        started = await start(request, count_only)
        if isinstance(started, Response):
            return started
        chat, running = started

        def shaper(first: JobStarted) -> MessageShaper:
            return MessageShaper(
                ReplyShaper(chat, model=first.model, prompt_tokens=first.prompt_tokens, tool_format=first.tool_format)
            )

        async def whole(first: JobStarted) -> Response:
            if count_only:  # the job ends with its JobStarted: nothing is decoded
                return JSONResponse({"input_tokens": first.prompt_tokens})
            return await _whole(shaper(first), running)

        def stream(first: JobStarted) -> Response:
            headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
            return StreamingResponse(_stream(shaper(first), running), media_type="text/event-stream", headers=headers)

        return await job_response(
            request,
            running,
            whole=whole,
            stream=stream if chat.stream and not count_only else None,
            refuse=lambda exc: error_response(exc.status, str(exc)),
        )

    return [
        Route("/v1/messages", messages, methods=["POST"]),
        Route("/v1/messages/count_tokens", count_tokens, methods=["POST"]),
    ]


def _parse(body: bytes, options: ApiOptions, client: str, count_only: bool) -> ChatRequest:
    defaults = replace(options.defaults, client=client) if client else options.defaults
    return parse_messages_request(parse_json_body(body), options.limits, defaults, count_only)


def _on_token(shaper: MessageShaper, running: RunningJob, record: TokenEvent, events: bool) -> list:
    if shaper.stopped_by_string:
        return []  # in flight before the engine heard
    out = shaper.on_token(record) if events else shaper.absorb(record)
    if shaper.stopped_by_string:
        running.job.enough.set()  # the rest is not wanted; the reply's totals still come
    return out


async def _whole(shaper: MessageShaper, running: RunningJob) -> Response:
    finished: Optional[FinishedEvent] = None
    failure: Optional[JobFailed] = None
    try:
        async for record in running.records():
            if isinstance(record, RoundEvent):
                shaper.shaper.on_round(record)
            elif isinstance(record, TokenEvent):
                _on_token(shaper, running, record, events=False)
            elif isinstance(record, FinishedEvent):
                finished = record
            elif isinstance(record, JobFailed):
                failure = record
    finally:
        if finished is None:
            running.job.cancel.set()  # the client went away
    if failure is not None:
        return error_response(failure.status, failure.message)
    return JSONResponse(shaper.whole(finished))


async def _stream(shaper: MessageShaper, running: RunningJob) -> AsyncIterator[bytes]:
    """The reply as Anthropic's events: message_start at once, pings while nothing else comes."""
    finished: Optional[FinishedEvent] = None
    try:
        yield _event(*shaper.start())
        async for record in running.records(idle=PING_S):
            if record is IDLE:
                yield _event("ping", {"type": "ping"})
            elif isinstance(record, RoundEvent):
                shaper.shaper.on_round(record)
            elif isinstance(record, TokenEvent):
                for event in _on_token(shaper, running, record, events=True):
                    yield _event(*event)
            elif isinstance(record, FinishedEvent):
                finished = record
            elif isinstance(record, JobFailed):
                # Mid-reply there is no status line left to set: the error goes as an event, as Anthropic's does.
                yield _event("error", error_body(record.status, record.message))
                return
        for event in shaper.finish(finished):
            yield _event(*event)
    except Exception as exc:  # a bug of ours mid-reply: the client hears it as an event, not as a cut stream
        print(
            f"SpecChat API: a streamed message failed: {type(exc).__name__}: {str(exc)[:200]!r}",
            file=sys.stderr,
            flush=True,
        )
        finished = None
        yield _event("error", error_body(500, OUR_FAULT))
    finally:
        running.close(finished is not None)
