"""What crosses the pipe between an EmbeddingWorker and its embedding process: a frozen record per message, matched
by type at both ends. Each request carries a serial that its answer repeats."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import numpy as np

from app.engine.embedding.model import EmbeddingInput
from app.engine.gguf.kind import ModelKind


@dataclass(frozen=True)
class EmbedderReady:
    """The model loaded: what /v1/models says of it."""

    name: str
    kind: ModelKind
    dim: int
    n_ctx: int


@dataclass(frozen=True)
class EmbedderLoadFailed:
    message: str  # one sentence


@dataclass(frozen=True)
class EmbedInputs:
    serial: int
    inputs: tuple[EmbeddingInput, ...]
    truncate: bool  # cut a text too long for the model (counted), or refuse it


@dataclass(frozen=True)
class RankDocuments:
    serial: int
    query: str
    documents: tuple[str, ...]


@dataclass(frozen=True)
class Embedded:
    serial: int
    vectors: np.ndarray  # (n, dim) float32; a reranker's (n, 1) scores
    tokens: int
    cut: tuple[int, ...]


@dataclass(frozen=True)
class EmbedRefused:
    """The request's own fault (an input too long, a token id out of range): one sentence for a 400."""

    serial: int
    message: str


@dataclass(frozen=True)
class StopEmbedder:
    """Exit the process's loop."""


EmbedRequest = Union[EmbedInputs, RankDocuments]
EmbedAnswer = Union[Embedded, EmbedRefused]
