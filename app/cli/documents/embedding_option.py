"""`--embedding FILE` for `index` and `generate --docs`: passages found by meaning as well as by their words.

The model runs in the CLI's own process with half the cores (app.engine.embedding.model.embedding_threads): the
command waits for the index anyway, and no chat model reads beside it until the index is current.
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import Optional

from app.cli.checks import UsageError
from app.documents.records import Embedder
from app.engine.embedding.model import Embedder as EmbeddingModel
from app.engine.embedding.model import embedding_threads
from app.engine.errors import ModelFileError, ModelLoadError


def add_embedding_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--embedding",
        metavar="FILE",
        default=None,
        help="a GGUF embedding model (nomic-embed-text, bge-small; Get models offers one): passages are found by "
        "meaning as well as by their words; the index keeps one model's vectors, and another model's replace them",
    )


@contextlib.contextmanager
def opened_embedder(args: argparse.Namespace) -> Iterator[tuple[Optional[Embedder], str]]:
    """The --embedding model and the name the index keeps its vectors under; (None, "") without one. Raises
    UsageError with the model's sentence when it cannot be used."""
    if not getattr(args, "embedding", None):
        yield None, ""
        return
    try:
        model = EmbeddingModel(args.embedding, n_threads=embedding_threads())
    except (ModelFileError, ModelLoadError) as exc:
        raise UsageError(f"--embedding: {exc}") from None
    try:
        yield model, model.path.name
    finally:
        model.close()
