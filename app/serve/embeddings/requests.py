"""The bodies of /v1/embeddings (OpenAI's shape) and /v1/rerank (llama-server's), read strictly: each bad value is
refused with one sentence (app.serve.errors.BadRequest), before anything reaches the embedding process."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional, Union

from app.engine.embedding.model import EmbeddingInput
from app.serve.errors import BadRequest
from app.serve.field_types import flag, is_int, whole

MAX_INPUTS = 2048  # inputs in one request (OpenAI's limit)
MAX_DOCUMENTS = 1024  # documents one rerank request scores
ENCODINGS = ("float", "base64")


@dataclass(frozen=True)
class EmbeddingsRequest:
    inputs: tuple[EmbeddingInput, ...]
    encoding: str  # "float" or "base64"
    dimensions: Optional[int]  # what the client asked for; the model's own is the only one served


@dataclass(frozen=True)
class RerankRequest:
    query: str
    documents: tuple[str, ...]
    top_n: Optional[int]
    return_documents: bool


def parse_embeddings_request(data: dict) -> EmbeddingsRequest:
    _model_field(data)
    encoding = data.get("encoding_format", "float")
    if encoding not in ENCODINGS:
        raise BadRequest('"encoding_format" must be "float" or "base64".')
    dimensions = whole(data, "dimensions", None, 1, 1 << 20)
    return EmbeddingsRequest(_inputs(data.get("input")), encoding, dimensions)


def parse_rerank_request(data: dict) -> RerankRequest:
    _model_field(data)
    query = data.get("query")
    if not isinstance(query, str) or not query.strip():
        raise BadRequest('"query" must be a non-empty string.')
    documents = data.get("documents", data.get("texts"))  # "texts": TEI's name, which llama-server takes too
    if not isinstance(documents, list) or not documents:
        raise BadRequest('"documents" must be a non-empty list of strings.')
    if len(documents) > MAX_DOCUMENTS:
        raise BadRequest(f'"documents" holds {len(documents)} documents; one request ranks at most {MAX_DOCUMENTS}.')
    texts = tuple(_document_text(document, index) for index, document in enumerate(documents))
    top_n = whole(data, "top_n", None, 1, 1 << 31)
    return RerankRequest(query, texts, top_n, flag(data, "return_documents"))


def _model_field(data: dict) -> None:
    model = data.get("model", "")
    if not isinstance(model, str):
        raise BadRequest('"model" must be a string.')


def _document_text(document: Any, index: int) -> str:
    if isinstance(document, dict):  # Jina's and Cohere's {"text": ...}
        document = document.get("text")
    if not isinstance(document, str) or not document.strip():
        raise BadRequest(f"Document {index} must be a non-empty string.")
    return document


def _inputs(value: Any) -> tuple[EmbeddingInput, ...]:
    """`input` as OpenAI takes it: a string, a list of strings, a list of token ids, or a list of such lists."""
    if isinstance(value, str):
        value = [value]
    elif isinstance(value, list) and value and all(is_int(v) for v in value):
        value = [value]  # one input given as token ids
    if not isinstance(value, list) or not value:
        raise BadRequest('"input" must be a non-empty string or a non-empty list of strings or of token ids.')
    if len(value) > MAX_INPUTS:
        raise BadRequest(f'"input" holds {len(value)} inputs; one request embeds at most {MAX_INPUTS}.')
    inputs: list[Union[str, tuple[int, ...]]] = []
    for index, item in enumerate(value):
        if isinstance(item, str) and item:
            inputs.append(item)
        elif isinstance(item, list) and item and all(is_int(token) for token in item):
            inputs.append(tuple(item))
        else:
            raise BadRequest(f"Input {index} must be a non-empty string or a non-empty list of token ids.")
    return tuple(inputs)
