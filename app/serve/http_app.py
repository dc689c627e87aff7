"""The API's routes (Starlette): /v1/models, /v1/chat/completions and /v1/completions (raw text and fill-in-the-middle),
streamed as server-sent events or whole; /health and /props as llama-server has them; /v1/responses from responses/;
/v1/embeddings and /v1/rerank from embeddings/.

Runs on the server's event loop. A request is checked (app.serve.access: its Origin, Host and API key; then its
size and fields, and its pictures named by URL fetched: app.serve.pictures.fetch) before it queues; its records come back from the engine's thread through an asyncio queue. A
client that goes away, while waiting or mid-stream, sets its job's cancel flag, which generation checks every round.
No exception reaches uvicorn: whatever a route raises is a 500 with one sentence, and one line in the log.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import replace
from typing import AsyncIterator, Callable, Optional

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from app.common.http_client import is_loopback_host
from app.engine.embedding.worker import EmbeddingWorker
from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from app.serve.jobs import JobFailed, JobQueue, JobStarted, ServedModels
from app.serve.job_flow import Idle, RunningJob, job_response, read_body, start_or_idle, submit, unless_gone
from app.serve.access import client_label, refusal
from app.serve.anthropic.routes import anthropic_routes
from app.serve.embeddings.routes import embedding_model_entry, embedding_routes
from app.serve.replies import ReplyShaper, error_body, models_list
from app.serve.completions.replies import CompletionShaper
from app.serve.completions.requests import ApiRequest, CompletionRequest, parse_completion_request
from app.serve.field_types import parse_json_body
from app.serve.pictures.fetch import fetch_pictures, picture_urls
from app.serve.errors import OUR_FAULT, BadRequest
from app.serve.requests import ApiOptions, parse_chat_request
from app.serve.ollama.routes import ollama_routes
from app.serve.responses.routes import responses_routes


def error_response(status: int, message: str) -> JSONResponse:
    """OpenAI's error shape, with one sentence."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(error_body(status, message), status_code=status, headers=headers)


STOPPING = "The server stopped before it could answer this request."
# A streamed chat request that has not started after HEADERS_AFTER_S waits its turn behind other replies: its client
# gets the stream's headers then, and a comment every WAITING_COMMENT_S, rather than silence until its turn.
HEADERS_AFTER_S = 1.0
WAITING_COMMENT_S = 10.0


SSE = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}  # a streamed reply's headers beside its type


def _sse(data: dict | str) -> bytes:
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    return f"data: {text}\n\n".encode("utf-8")


def build_app(
    options: ApiOptions,
    queue: JobQueue,
    models: Callable[[], ServedModels],
    embedder: Optional[EmbeddingWorker] = None,
) -> "_Shielded":
    """The ASGI application. `models()` says what is loaded now (the engine's thread keeps it current); `embedder`
    answers /v1/embeddings and /v1/rerank (serve --embedding), None without an embedding model."""
    started = int(time.time())
    keys = tuple(key.encode("utf-8") for key in options.keys)

    local_only = is_loopback_host(options.host)

    def denied(request: Request, keyed: bool = True) -> Optional[JSONResponse]:
        """Why `request` is refused (app.serve.access), or None; `keyed`: it must send the key too."""
        port = request.scope.get("server", ("", 0))[1] or 0
        refused = refusal(request.headers, port, local_only, keys if keyed else ())
        return error_response(refused.status, refused.message) if refused is not None else None

    async def list_models(request: Request) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        served = models()
        listed = models_list(served.target, served.draft, served.n_ctx, started)
        if embedder is not None and embedder.model is not None:
            listed["data"].append(embedding_model_entry(embedder, started))
        return JSONResponse(listed)

    async def props(request: Request) -> Response:
        """llama-server's /props, as far as clients read it (the context size)."""
        refused = denied(request)
        if refused is not None:
            return refused
        served = models()
        return JSONResponse(
            {
                "default_generation_settings": {"n_ctx": served.n_ctx},
                "model_alias": served.target,
                "specchat": {"draft": served.draft or None},
            }
        )

    async def health(request: Request) -> Response:
        """llama-server's /health: 200 {"status": "ok"} with a model loaded, 503 without one. Open without the key,
        as llama-server's is, so a monitor needs none: it tells nothing but whether a model is loaded. Web pages
        and other names are refused as everywhere."""
        refusal = denied(request, keyed=False)
        if refusal is not None:
            return refusal
        if not models().target:
            return JSONResponse({"status": "no model loaded"}, status_code=503)
        return JSONResponse({"status": "ok"})

    async def chat_completions(request: Request) -> Response:
        return await answer(request, parse_chat_request, headers_while_waiting=True)

    async def completions(request: Request) -> Response:
        return await answer(request, parse_completion_request)

    async def answer(
        request: Request, parse: Callable[..., ApiRequest], headers_while_waiting: bool = False
    ) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        try:
            body = await read_body(request, options.limits.max_body_bytes)
            # Off the event loop: a 4 MiB body takes a while to read and check, and other clients' streams go on.
            client = client_label(request.headers, keys)
            chat = await run_in_threadpool(_parse, body, options, parse, client)
            if picture_urls(chat):
                limits = options.limits
                chat = await unless_gone(request, fetch_pictures(chat, limits.image_url_hosts, limits.image_fetch_s))
            running = submit(chat, queue, options.limits.max_queued)
        except BadRequest as exc:
            return error_response(exc.status, str(exc))
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is there to read it

        def shaper(first: JobStarted) -> ReplyShaper:
            shaper_type = CompletionShaper if isinstance(chat, CompletionRequest) else ReplyShaper
            return shaper_type(
                chat, model=first.model, prompt_tokens=first.prompt_tokens, tool_format=first.tool_format
            )

        def stream(first: JobStarted) -> Response:
            return StreamingResponse(_stream(shaper(first), running), media_type="text/event-stream", headers=SSE)

        if chat.stream and headers_while_waiting and not await running.starts_within(HEADERS_AFTER_S):
            return StreamingResponse(_waiting_stream(shaper, running), media_type="text/event-stream", headers=SSE)
        return await job_response(
            request,
            running,
            whole=lambda first: _whole_reply(shaper(first), running),
            stream=stream if chat.stream else None,
            refuse=lambda exc: error_response(exc.status, str(exc)),
        )

    async def not_found(request: Request) -> Response:
        path = request.url.path if len(request.url.path) <= 100 else request.url.path[:97] + "..."
        return error_response(
            404,
            f"There is no {path}; this server answers /v1/models, /v1/chat/completions, /v1/completions, "
            "/v1/responses, /v1/messages, /v1/embeddings and /v1/rerank, and Ollama's /api/chat, /api/generate, /api/tags and /api/show.",
        )

    routes = [
        Route("/v1/models", list_models, methods=["GET"]),
        Route("/models", list_models, methods=["GET"]),
        Route("/props", props, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/chat/completions", chat_completions, methods=["POST"]),
        Route("/chat/completions", chat_completions, methods=["POST"]),
        Route("/v1/completions", completions, methods=["POST"]),
        Route("/completions", completions, methods=["POST"]),
        *ollama_routes(options, queue, models, embedder),
        *responses_routes(options, queue, denied, keys),
        *anthropic_routes(options, queue),
        *embedding_routes(options, embedder, denied),
        Route("/{path:path}", not_found, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
    ]
    app = Starlette(routes=routes, exception_handlers={Exception: _our_fault})
    return _Shielded(app)


def _parse(body: bytes, options: ApiOptions, parse: Callable[..., ApiRequest], client: str) -> ApiRequest:
    defaults = replace(options.defaults, client=client) if client else options.defaults
    return parse(parse_json_body(body), options.limits, defaults)


async def _our_fault(request: Request, exc: Exception) -> Response:
    """A bug of ours in a route: the client gets one sentence (Starlette then raises it on to _Shielded)."""
    return error_response(500, OUR_FAULT)


class _Shielded:
    """The outermost layer: an exception that escapes the application is written to the log in one line and goes no
    further (uvicorn would log its traceback); a client that has no response yet gets a 500 with one sentence."""

    def __init__(self, app) -> None:
        self._app = app

    async def __call__(self, scope, receive, send) -> None:
        started = False

        async def watched_send(message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self._app(scope, receive, watched_send)
        except asyncio.CancelledError:
            # uvicorn cancels what still runs once a stopping server's grace is over (a picture on its way, say):
            # the end of the server, not a failure, so no traceback; the client hears why.
            if scope["type"] == "http" and not started:
                try:
                    await error_response(503, STOPPING)(scope, receive, send)
                except Exception:
                    pass  # the connection is gone
        except Exception as exc:
            print(
                f"SpecChat API: a request to {scope.get('path', '?')!r} failed: {type(exc).__name__}: "
                f"{str(exc)[:200]!r}",
                file=sys.stderr,
                flush=True,
            )
            if scope["type"] == "http" and not started:
                try:
                    await error_response(500, OUR_FAULT)(scope, receive, send)
                except Exception:
                    pass  # the connection is gone


async def _whole_reply(shaper: ReplyShaper, running: RunningJob) -> Response:
    finished: Optional[FinishedEvent] = None
    failure: Optional[JobFailed] = None
    try:
        async for record in running.records():
            if isinstance(record, RoundEvent):
                shaper.on_round(record)
            elif isinstance(record, TokenEvent):
                running.released(shaper, record)
            elif isinstance(record, FinishedEvent):
                finished = record
            elif isinstance(record, JobFailed):
                failure = record
    finally:
        if finished is None:
            running.job.cancel.set()  # the client went away
    if failure is not None:
        return error_response(failure.status, failure.message)
    shaper.flush()
    return JSONResponse(shaper.whole_reply(finished))


async def _waiting_stream(shaper: Callable[[JobStarted], ReplyShaper], running: RunningJob) -> AsyncIterator[bytes]:
    """A streamed reply whose request waits its turn (its headers went at once): a comment every WAITING_COMMENT_S
    until it starts, then the reply; a failure before it starts goes as an error event, the status line being sent."""
    first: Optional[JobStarted] = None
    try:
        async for record in start_or_idle(running, WAITING_COMMENT_S):
            if isinstance(record, Idle):
                yield b": waiting\n\n"
            else:
                first = record
    except BadRequest as exc:
        running.close(False)
        yield _sse(error_body(exc.status, str(exc)))
        return
    except BaseException:  # the client went away (the response is cancelled) or the server stops
        running.close(False)
        raise
    if first is not None:  # start_or_idle ends with the JobStarted, or raises
        async for part in _stream(shaper(first), running):
            yield part


async def _stream(shaper: ReplyShaper, running: RunningJob) -> AsyncIterator[bytes]:
    """The reply as server-sent events: a chunk per token (or per group released after a held stop string)."""
    finished: Optional[FinishedEvent] = None
    try:
        yield _sse(shaper.first_chunk())
        async for record in running.records():
            if isinstance(record, RoundEvent):
                shaper.on_round(record)
            elif isinstance(record, TokenEvent):
                held = running.released(shaper, record)
                for chunk in shaper.chunks(held) if held is not None else ():
                    yield _sse(chunk)
            elif isinstance(record, FinishedEvent):
                finished = record
            elif isinstance(record, JobFailed):
                # Mid-reply there is no status line left to set: the error goes as an event, as OpenAI's does.
                yield _sse({"error": {"message": record.message, "type": "server_error", "code": record.status}})
                return
        for chunk in shaper.chunks(shaper.flush(), last=True):
            yield _sse(chunk)
        for chunk in shaper.last_chunks(finished):
            yield _sse(chunk)
        yield _sse("[DONE]")
    except Exception as exc:  # a bug of ours mid-reply: the client hears it as an event, not as a cut stream
        print(
            f"SpecChat API: a streamed reply failed: {type(exc).__name__}: {str(exc)[:200]!r}",
            file=sys.stderr,
            flush=True,
        )
        finished = None
        yield _sse({"error": {"message": OUR_FAULT, "type": "server_error", "code": 500}})
    finally:
        running.close(finished is not None)
