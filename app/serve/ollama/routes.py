"""Ollama's routes on the API server's port: the probes (`/`, /api/version), the model listings (/api/tags, /api/ps,
/api/show), /api/chat and /api/generate (newline-delimited JSON, or one object with `"stream": false`), and a
sentence for what SpecChat does not do the Ollama way (pulling and creating models, embeddings).

A request is checked as the OpenAI routes check theirs (app.serve.access: Origin, Host, the API key) and goes
through the same queue (app.serve.job_flow); only the bodies and the shapes are Ollama's. Errors are Ollama's
shape, `{"error": "..."}`; one that comes mid-stream is a line of that shape.
"""

from __future__ import annotations

import sys
import time
from dataclasses import replace
from typing import AsyncIterator, Callable, Optional, Union

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from app.common.http_client import is_loopback_host
from app.engine.events import FinishedEvent
from app.engine.embedding.worker import EmbeddingWorker
from app.serve.access import client_label, refusal
from app.serve.completions.requests import ApiRequest
from app.serve.embeddings.ollama_embed import ollama_embed_route
from app.serve.errors import OUR_FAULT, BadRequest
from app.serve.field_types import parse_json_body
from app.serve.job_flow import RunningJob, job_response, read_body, submit
from app.serve.jobs import JobFailed, JobQueue, JobStarted, ServedModels
from app.serve.ollama.models import (
    OLLAMA_VERSION,
    ModelFacts,
    check_name,
    model_facts,
    running_entry,
    show_reply,
    tag_entry,
    timestamp,
)
from app.serve.ollama.replies import Endpoint, OllamaReply, ndjson
from app.serve.ollama.requests import chat_request, generate_request, streams
from app.serve.requests import ApiOptions

RUNNING = "Ollama is running"  # what Ollama's `/` says, and what its clients probe for
MANAGED = (
    "SpecChat manages its own models: choose one in SpecChat's window or start serve with --target; "
    "{path} is not available here."
)
NO_EMBEDDINGS = "This server has no embedding model: {path} needs one, started with serve --embedding FILE."
# Ollama's paths that SpecChat answers with a sentence: it keeps its models its own way, and embeds only with an
# embedding model (serve --embedding).
MANAGEMENT_PATHS = ("/api/pull", "/api/push", "/api/create", "/api/copy", "/api/delete")
EMBEDDING_PATHS = ("/api/embed", "/api/embeddings")


def error(status: int, message: str) -> JSONResponse:
    """Ollama's error shape (a 401 says which scheme the key goes in, as the OpenAI routes' do)."""
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse({"error": message}, status_code=status, headers=headers)


def ollama_routes(
    options: ApiOptions,
    queue: JobQueue,
    models: Callable[[], ServedModels],
    embedder: Optional[EmbeddingWorker] = None,
) -> list[Route]:
    """Ollama's API as Starlette routes; `models()` says what is loaded now; `embedder` answers /api/embed."""
    keys = tuple(key.encode("utf-8") for key in options.keys)
    local_only = is_loopback_host(options.host)

    def denied(request: Request) -> Optional[Response]:
        port = request.scope.get("server", ("", 0))[1] or 0
        refused = refusal(request.headers, port, local_only, keys)
        return error(refused.status, refused.message) if refused is not None else None

    async def running(request: Request) -> Response:
        return denied(request) or PlainTextResponse(RUNNING)

    async def version(request: Request) -> Response:
        return denied(request) or JSONResponse({"version": OLLAMA_VERSION})

    async def listing(request: Request, entry: Callable[[ModelFacts], dict]) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        served = models()
        if not served.target:
            return JSONResponse({"models": []})
        facts = await run_in_threadpool(model_facts, served)  # the first look reads the file's header
        return JSONResponse({"models": [entry(facts)]})

    async def tags(request: Request) -> Response:
        return await listing(request, tag_entry)

    async def ps(request: Request) -> Response:
        return await listing(request, running_entry)

    async def show(request: Request) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        try:
            data = parse_json_body(await read_body(request, options.limits.max_body_bytes))
            served = models()
            check_name(data.get("model") or data.get("name"), served)  # "name": Ollama's older spelling
        except BadRequest as exc:
            return error(exc.status, str(exc))
        except ClientDisconnect:
            return Response(status_code=400)
        return JSONResponse(await run_in_threadpool(lambda: show_reply(model_facts(served))))

    async def chat(request: Request) -> Response:
        return await answer(request, "chat")

    async def generate(request: Request) -> Response:
        return await answer(request, "generate")

    async def answer(request: Request, endpoint: Endpoint) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        arrived_ns = time.monotonic_ns()
        try:
            data = parse_json_body(await read_body(request, options.limits.max_body_bytes))
            model = check_name(data.get("model"), models())
            empty = (
                not data.get("messages") if endpoint == "chat" else not data.get("prompt") and not data.get("images")
            )
            if empty:  # Ollama's way to load a model ahead of use: it is loaded already
                streams(data)
                return JSONResponse(_loaded(endpoint, model, arrived_ns))
            client = client_label(request.headers, keys)
            defaults = replace(options.defaults, client=client) if client else options.defaults
            parse = chat_request if endpoint == "chat" else generate_request
            # Off the event loop: a 4 MiB body takes a while to check, and other clients' streams go on.
            asked: ApiRequest = await run_in_threadpool(parse, data, options.limits, defaults)
            running_job = submit(asked, queue, options.limits.max_queued)
        except BadRequest as exc:
            return error(exc.status, str(exc))
        except ClientDisconnect:
            return Response(status_code=400)

        def stream(started: JobStarted) -> Response:
            reply = OllamaReply.start(endpoint, model, asked, started, arrived_ns)
            return StreamingResponse(_stream(reply, running_job), media_type="application/x-ndjson")

        return await job_response(
            request,
            running_job,
            whole=lambda started: _whole(OllamaReply.start(endpoint, model, asked, started, arrived_ns), running_job),
            stream=stream if asked.stream else None,
            refuse=lambda exc: error(exc.status, str(exc)),
        )

    def refuse(message: str) -> Callable:
        async def route(request: Request) -> Response:
            return denied(request) or error(400, message.format(path=request.url.path))

        return route

    return [
        Route("/", running, methods=["GET"]),  # Starlette answers HEAD for every GET route
        Route("/api/version", version, methods=["GET"]),
        Route("/api/tags", tags, methods=["GET"]),
        Route("/api/ps", ps, methods=["GET"]),
        Route("/api/show", show, methods=["POST"]),
        Route("/api/chat", chat, methods=["POST"]),
        Route("/api/generate", generate, methods=["POST"]),
        *(Route(path, refuse(MANAGED), methods=["POST", "DELETE"]) for path in MANAGEMENT_PATHS),
        *(
            Route(
                path,
                refuse(NO_EMBEDDINGS)
                if embedder is None
                else ollama_embed_route(embedder, options.limits.max_body_bytes, denied, error),
                methods=["POST"],
            )
            for path in EMBEDDING_PATHS
        ),
    ]


def _loaded(endpoint: Endpoint, model: str, arrived_ns: int) -> dict:
    said = {"message": {"role": "assistant", "content": ""}} if endpoint == "chat" else {"response": ""}
    return {
        "model": model,
        "created_at": timestamp(),
        **said,
        "done": True,
        "done_reason": "load",
        "total_duration": time.monotonic_ns() - arrived_ns,
    }


async def _records(
    reply: OllamaReply, running: RunningJob
) -> AsyncIterator[Union[list[dict], FinishedEvent, JobFailed]]:
    """The job's records, each token's released text turned into Ollama lines: yields lists of lines, then the
    FinishedEvent or a JobFailed."""
    async for record in running.records():
        if isinstance(record, (FinishedEvent, JobFailed)):
            yield record
            continue
        lines = reply.lines(reply.take(record))
        if reply.shaper.stopped_by_string:
            running.job.enough.set()  # the rest is not wanted; the reply's totals still come
        if lines:
            yield lines


async def _whole(reply: OllamaReply, running: RunningJob) -> Response:
    finished: Optional[FinishedEvent] = None
    try:
        async for item in _records(reply, running):
            if isinstance(item, JobFailed):
                return error(item.status, item.message)
            if isinstance(item, FinishedEvent):
                finished = item
    finally:
        if finished is None:
            running.job.cancel.set()  # the client went away, or the job failed
    reply.shaper.flush()
    return JSONResponse(reply.whole(finished))


async def _stream(reply: OllamaReply, running: RunningJob) -> AsyncIterator[bytes]:
    finished: Optional[FinishedEvent] = None
    try:
        async for item in _records(reply, running):
            if isinstance(item, JobFailed):
                yield ndjson({"error": item.message})  # mid-reply there is no status line left to set
                return
            if isinstance(item, FinishedEvent):
                finished = item
            else:
                for line in item:
                    yield ndjson(line)
        for line in reply.lines(reply.shaper.flush(), last=True):
            yield ndjson(line)
        yield ndjson(reply.last_line(finished))
    except Exception as exc:  # a bug of ours mid-reply: the client hears it as a line, not as a cut stream
        print(
            f"SpecChat API: a streamed Ollama reply failed: {type(exc).__name__}: {str(exc)[:200]!r}",
            file=sys.stderr,
            flush=True,
        )
        finished = None
        yield ndjson({"error": OUR_FAULT})
    finally:
        running.close(finished is not None)
