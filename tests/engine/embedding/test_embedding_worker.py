"""The embedding process: the documents' protocol answered out of process, a crash costing one request (with a
sentence) and never the next, even when the process is killed while it reads that request, a silent process
costing its caller no more than the timeout, and a file that is no embedding model refused at start with one
sentence."""

from __future__ import annotations

import os
import signal
import time

import numpy as np
import pytest

from app.engine.embedding.wire import EmbedInputs
from app.engine.embedding.worker import CRASHED, EmbeddingStartError, EmbeddingWorker
from app.testing.synthetic_embedding import EMBED_DIM, write_tiny_embedding_model


DEADLINE_S = 60.0  # a spawned process imports llama.cpp and loads the model: seconds on a busy 2-core machine


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
        assert said == ["The embedding process ended (killed by SIGKILL); starting it again."]
    finally:
        worker.close()


@pytest.mark.slow
def test_a_process_killed_while_embedding_costs_that_request_a_sentence_and_a_silent_one_its_timeout(embedding_file):
    said: list[str] = []
    worker = EmbeddingWorker(embedding_file, n_threads=1, say=said.append)
    try:
        worker.start()
        before = worker.embed(["the cat sat"])
        first_pid = worker.pid
        assert first_pid is not None
        os.kill(first_pid, signal.SIGSTOP)  # it cannot answer: the request below is read when it is killed
        asked = worker.submit(lambda serial: EmbedInputs(serial, ("the cat sat",), truncate=True))
        deadline = time.monotonic() + DEADLINE_S
        while not asked.running() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert asked.running(), "the request was never taken to the process"
        os.kill(first_pid, signal.SIGKILL)  # as the system does when memory runs out
        with pytest.raises(EmbeddingStartError, match=CRASHED):
            asked.result(DEADLINE_S)
        assert said == ["The embedding process ended (killed by SIGKILL); starting it again."]
        assert np.allclose(worker.embed(["the cat sat"]), before, atol=1e-5)  # a fresh process answers
        second_pid = worker.pid
        assert second_pid is not None and second_pid != first_pid

        os.kill(second_pid, signal.SIGSTOP)  # stuck: its caller hears so at its deadline, with a sentence
        with pytest.raises(TimeoutError, match=r"^No answer came within 0.5 s\.$"):
            worker.embed(["the cat sat"], timeout_s=0.5)
    finally:
        worker.close()  # a stuck process is killed, not waited for
    assert worker.pid is None
    with pytest.raises(ProcessLookupError):
        os.kill(second_pid, 0)  # reaped, not left as a zombie


def test_a_chat_model_is_refused_at_start_with_one_sentence(tiny_models):
    worker = EmbeddingWorker(tiny_models.target, n_threads=1)
    with pytest.raises(EmbeddingStartError, match=r"^tiny-target.gguf is a chat model, not an embedding model: "):
        worker.start()
