"""The embedding process: the documents' protocol answered out of process, a crash costing one request (with a
sentence) and never the next, and a file that is no embedding model refused at start with one sentence."""

from __future__ import annotations

import os
import signal

import numpy as np
import pytest

from app.engine.embedding.worker import CRASHED, EmbeddingStartError, EmbeddingWorker
from app.testing.synthetic_embedding import EMBED_DIM, write_tiny_embedding_model


@pytest.fixture(scope="module")
def embedding_file(tmp_path_factory):
    return write_tiny_embedding_model(tmp_path_factory.mktemp("tiny-embedding") / "tiny-embed.gguf")


@pytest.mark.slow
def test_the_worker_embeds_out_of_process_and_outlives_a_crash_of_its_process(embedding_file):
    said: list[str] = []
    worker = EmbeddingWorker(embedding_file, n_threads=1, say=said.append)
    try:
        assert worker.start().dim == EMBED_DIM
        before = worker.embed(["the cat sat", "bread"])
        assert before.shape == (2, EMBED_DIM) and worker.dim == EMBED_DIM
        assert worker.pid is not None
        os.kill(worker.pid, signal.SIGKILL)  # as llama.cpp's abort() would end it
        with pytest.raises(EmbeddingStartError, match=CRASHED):
            worker.embed(["the cat sat"])
        assert np.allclose(worker.embed(["the cat sat", "bread"]), before, atol=1e-5)
        assert said == ["The embedding process ended; starting it again."]
    finally:
        worker.close()


def test_a_chat_model_is_refused_at_start_with_one_sentence(tiny_models):
    worker = EmbeddingWorker(tiny_models.target, n_threads=1)
    with pytest.raises(EmbeddingStartError, match=r"^tiny-target.gguf is a chat model, not an embedding model: "):
        worker.start()
