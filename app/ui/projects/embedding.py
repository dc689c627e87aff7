"""The embedding model a project's documents are read with in the window (Settings > Documents): passages found by
meaning as well as by their words.

The model runs in a process of its own (app.engine.embedding.worker.EmbeddingWorker), never in the window's: it is
started by the indexing thread when that first needs it (loading takes seconds, and the GUI thread never waits for
it), and a question asked before it has loaded is answered by its words alone. On Send the question is embedded
on the question's thread within QUESTION_DEADLINE_S: the process reads requests in order, so a question asked
while a batch of passages is being embedded waits for that batch, and past the deadline it goes by its words (the
reply never waits longer).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Optional

import numpy as np

from app.documents.retrieval import NO_EMBEDDER_SENTENCE
from app.engine.embedding.model import embedding_threads
from app.engine.embedding.worker import EmbeddingBusy, EmbeddingStartError, EmbeddingWorker

QUESTION_DEADLINE_S = 3.0
# What embedding a passage or a question can raise: the process's sentence, a crash, a full queue, the deadline.
EMBEDDING_ERRORS = (EmbeddingStartError, EmbeddingBusy, ValueError, TimeoutError)


def meaning_sentence(name: str) -> str:
    """What the documents line says while passages are found by meaning with the model `name`."""
    return f"Passages are found by meaning with {name} as well as by their words."


def unusable_sentence(name: str, reason: str) -> str:
    """What the documents line says when the chosen model cannot be used: words alone go on."""
    return f"{name} could not be used, so passages are found by their words alone: {reason.rstrip('.')}."


class WindowEmbedder:
    """The chosen embedding model's process, started on first use by the indexing thread. `problem` holds the
    sentence of a load that failed (then it is not tried again until the choice changes)."""

    def __init__(self, path: str):
        self.path = path
        self.name = Path(path).name
        self.problem = ""
        self._worker: Optional[EmbeddingWorker] = None
        self._closed = False
        self._lock = threading.Lock()

    def for_indexing(self) -> Optional[EmbeddingWorker]:
        """The loaded model, started now if need be (the indexing thread only: it waits for the load); None when
        it cannot be loaded (`problem` says why) or the choice changed meanwhile."""
        if self._worker is not None or self.problem or self._closed:
            return self._worker
        worker = EmbeddingWorker(Path(self.path), n_threads=embedding_threads())
        try:
            worker.start()
        except EmbeddingStartError as exc:
            self.problem = unusable_sentence(self.name, str(exc))
            return None
        with self._lock:
            if not self._closed:
                self._worker = worker
                return worker
        worker.close()  # the choice changed while it loaded
        return None

    def question_vector(self, question: str) -> tuple[Optional[np.ndarray], str]:
        """The question's vector, or None and why in a sentence ("" while the model is not loaded yet: the line
        above the composer says that). The question's thread (app.ui.projects.question_sources), never the GUI
        thread: it never waits for a load, and for an answer at most QUESTION_DEADLINE_S."""
        worker = self._worker
        if worker is None:
            return None, ""
        try:
            return np.asarray(worker.embed([question], timeout_s=QUESTION_DEADLINE_S), dtype=np.float32), ""
        except EMBEDDING_ERRORS as exc:
            reason = str(exc).rstrip(".")
            return None, f"{self.name} did not embed the question ({reason}), so its passages were found by its words."

    def sentence(self) -> str:
        """What the documents line says of how passages are found."""
        return self.problem or meaning_sentence(self.name)

    def close(self) -> None:
        """End the model's process (the choice changed, or the window closes)."""
        with self._lock:
            self._closed = True
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.close()


class AskedVector:
    """The documents' Embedder protocol over a vector already computed: the question's, embedded once on Send."""

    def __init__(self, vector: np.ndarray):
        self._vector = vector

    def embed(self, texts: list[str]) -> np.ndarray:
        return self._vector


def how_found_sentence(embedder: Optional[WindowEmbedder]) -> str:
    """The documents line's sentence on how passages are found: by meaning too, words alone (and what a model
    would add), or why the chosen one could not be used."""
    return embedder.sentence() if embedder is not None else NO_EMBEDDER_SENTENCE
