"""Ollama's POST /api/embed (and its older /api/embeddings), answered by the same embedding process as /v1/embeddings,
in Ollama's shapes: `{"model", "input"}` -> `{"model", "embeddings": [[...]], "prompt_eval_count"}`, and
`{"model", "prompt"}` -> `{"embedding": [...]}`. As Ollama does, a text too long for the model is cut unless the
request says `"truncate": false` (then a 400 with one sentence). The embedding model answers whatever name a request
gives: Ollama's clients name it as their settings say, and /api/tags lists the chat model."""

from __future__ import annotations

import time
from typing import Any, Callable, Optional

from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from app.engine.embedding.wire import EmbedInputs
from app.engine.embedding.worker import EmbeddingWorker
from app.serve.embeddings.requests import MAX_INPUTS
from app.serve.errors import BadRequest
from app.serve.field_types import flag, parse_json_body
from app.serve.job_flow import read_body
from app.serve.embeddings.routes import asked_of, model_id


def ollama_embed_route(
    worker: EmbeddingWorker,
    max_body_bytes: int,
    denied: Callable[[Request], Optional[Response]],
    error: Callable[[int, str], Response],
) -> Callable:
    """The route for /api/embed and /api/embeddings; `denied` and `error` are the Ollama routes' own."""

    async def embed(request: Request) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        legacy = request.url.path.rstrip("/").endswith("/embeddings")
        arrived = time.monotonic_ns()
        try:
            if worker.model is None or worker.model.kind != "embedding":
                raise BadRequest("The server's embedding model is a reranker: it does not embed.")
            body = await read_body(request, max_body_bytes)
            texts, truncate = await run_in_threadpool(lambda: _read(parse_json_body(body), legacy))
            answer = await asked_of(request, worker, lambda serial: EmbedInputs(serial, texts, truncate=truncate))
        except BadRequest as exc:
            return error(exc.status, str(exc))
        except ClientDisconnect:
            return Response(status_code=400)
        rows = [[float(x) for x in row] for row in answer.vectors]
        if legacy:
            return JSONResponse({"embedding": rows[0]})
        return JSONResponse(
            {
                "model": model_id(worker),
                "embeddings": rows,
                "total_duration": time.monotonic_ns() - arrived,
                "load_duration": 0,
                "prompt_eval_count": answer.tokens,
            }
        )

    return embed


def _read(data: dict, legacy: bool) -> tuple[tuple[str, ...], bool]:
    """The texts to embed and whether to cut a long one. Raises BadRequest."""
    if not isinstance(data.get("model", ""), str):
        raise BadRequest('"model" must be a string.')
    value: Any = data.get("prompt") if legacy else data.get("input")
    name = "prompt" if legacy else "input"
    texts = [value] if isinstance(value, str) else value
    if not isinstance(texts, list) or not texts or legacy and len(texts) != 1:
        raise BadRequest(f'"{name}" must be a non-empty string' + ("." if legacy else " or list of strings."))
    if len(texts) > MAX_INPUTS:
        raise BadRequest(f'"{name}" holds {len(texts)} texts; one request embeds at most {MAX_INPUTS}.')
    for index, text in enumerate(texts):
        if not isinstance(text, str) or not text:
            raise BadRequest(f'"{name}" must hold non-empty strings; item {index} is not one.')
    return tuple(texts), flag(data, "truncate", True)
