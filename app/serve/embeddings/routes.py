"""POST /v1/embeddings and POST /v1/rerank (with llama-server's other spellings), answered by the embedding process.

A request is checked as every route's is (who may ask, the body's size and fields), off the event loop, then queued
for the embedding process (app.engine.embedding.worker): at most the server's --queue wait, more get a 503. A client
that goes away while its request waits drops it. The chat engine never waits on any of this: the embedding model
runs in its own process.
"""

from __future__ import annotations

import asyncio
import base64
from typing import Callable, Optional

import numpy as np
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from app.engine.embedding.wire import EmbedInputs, EmbedRefused, RankDocuments
from app.engine.embedding.worker import EmbeddingBusy, EmbeddingStartError, EmbeddingWorker
from app.serve.embeddings.requests import (
    EmbeddingsRequest,
    RerankRequest,
    parse_embeddings_request,
    parse_rerank_request,
)
from app.serve.errors import BadRequest
from app.serve.field_types import parse_json_body
from app.serve.job_flow import read_body, unless_gone
from app.serve.replies import error_body
from app.serve.requests import ApiOptions

NO_EMBEDDING_MODEL = "This server has no embedding model: start it with serve --embedding FILE."


def embedding_routes(
    options: ApiOptions,
    worker: Optional[EmbeddingWorker],
    denied: Callable[[Request], Optional[Response]],
) -> list[Route]:
    """The embedding routes for build_app; `worker` is None when the server has no embedding model."""

    async def embeddings(request: Request) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        try:
            if worker is None or worker.model is None:
                raise BadRequest(NO_EMBEDDING_MODEL, 501)
            if worker.model.kind == "reranker":
                raise BadRequest(
                    "The server's model is a reranker: it ranks documents at /v1/rerank, it does not embed."
                )
            body = await read_body(request, options.limits.max_body_bytes)
            asked = await run_in_threadpool(lambda: parse_embeddings_request(parse_json_body(body)))
            dim = worker.model.dim
            if asked.dimensions is not None and asked.dimensions != dim:
                raise BadRequest(
                    f"The embedding model's vectors have {dim} dimensions; it cannot make {asked.dimensions}."
                )
            answer = await asked_of(request, worker, lambda serial: EmbedInputs(serial, asked.inputs, truncate=False))
            return JSONResponse(await run_in_threadpool(_embeddings_body, asked, answer.vectors, answer.tokens, worker))
        except BadRequest as exc:
            return _error(exc.status, str(exc))
        except ClientDisconnect:
            return Response(status_code=400)  # nobody is there to read it

    async def rerank(request: Request) -> Response:
        refused = denied(request)
        if refused is not None:
            return refused
        try:
            if worker is None or worker.model is None:
                raise BadRequest(NO_EMBEDDING_MODEL, 501)
            if worker.model.kind != "reranker":
                raise BadRequest(
                    "The server's embedding model is not a reranker: start it with serve --embedding and a reranker "
                    "model (such as bge-reranker) to rank documents.",
                    501,
                )
            body = await read_body(request, options.limits.max_body_bytes)
            asked = await run_in_threadpool(lambda: parse_rerank_request(parse_json_body(body)))
            answer = await asked_of(request, worker, lambda serial: RankDocuments(serial, asked.query, asked.documents))
            return JSONResponse(_rerank_body(asked, answer.vectors[:, 0], answer.tokens, worker))
        except BadRequest as exc:
            return _error(exc.status, str(exc))
        except ClientDisconnect:
            return Response(status_code=400)

    return [
        Route("/v1/embeddings", embeddings, methods=["POST"]),
        Route("/embeddings", embeddings, methods=["POST"]),
        *(Route(path, rerank, methods=["POST"]) for path in ("/v1/rerank", "/rerank", "/v1/reranking", "/reranking")),
    ]


async def asked_of(request: Request, worker: EmbeddingWorker, build):
    """The embedding process's answer to `build(serial)`. Raises BadRequest (the request's fault: 400; the queue
    full: 503; the process gone: 500) or ClientDisconnect."""
    try:
        future = worker.submit(build)
    except EmbeddingBusy as exc:
        raise BadRequest(str(exc), 503) from None
    try:
        answer = await unless_gone(request, asyncio.wrap_future(future))
    except EmbeddingStartError as exc:
        raise BadRequest(str(exc), 500) from None
    finally:
        future.cancel()  # a no-op once it has run; drops it while it waits for a client gone away
    if isinstance(answer, EmbedRefused):
        raise BadRequest(answer.message)
    return answer


def model_id(worker: EmbeddingWorker) -> str:
    return worker.path.name.removesuffix(".gguf")


def embedding_model_entry(worker: EmbeddingWorker, created: int) -> dict:
    """/v1/models' entry for the embedding model: its `specchat.type` says "embedding" or "reranker"."""
    assert worker.model is not None
    return {
        "id": model_id(worker),
        "object": "model",
        "created": created,
        "owned_by": "specchat",
        "specchat": {"type": worker.model.kind, "dimensions": worker.model.dim, "n_ctx": worker.model.n_ctx},
    }


def _embeddings_body(asked: EmbeddingsRequest, vectors: np.ndarray, tokens: int, worker: EmbeddingWorker) -> dict:
    """OpenAI's shape: a row per input, as floats or as base64 of little-endian float32 (what its SDK asks for)."""

    def encoded(row: np.ndarray):
        if asked.encoding == "base64":
            return base64.b64encode(row.astype("<f4").tobytes()).decode("ascii")
        return [float(x) for x in row]

    return {
        "object": "list",
        "data": [{"object": "embedding", "index": i, "embedding": encoded(row)} for i, row in enumerate(vectors)],
        "model": model_id(worker),
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _rerank_body(asked: RerankRequest, scores: np.ndarray, tokens: int, worker: EmbeddingWorker) -> dict:
    """llama-server's shape: the documents by relevance, most relevant first, `top_n` of them when it is given."""
    order = sorted(range(len(scores)), key=lambda i: -float(scores[i]))[: asked.top_n or len(scores)]
    results = []
    for index in order:
        result: dict = {"index": index, "relevance_score": float(scores[index])}
        if asked.return_documents:
            result["document"] = {"text": asked.documents[index]}
        results.append(result)
    return {
        "model": model_id(worker),
        "object": "list",
        "results": results,
        "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
    }


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse(error_body(status, message), status_code=status)
