"""The embedding routes are guarded and bounded as every route is: the API key, a full queue (a 503 with one
sentence), and a server closing with requests still waiting (each hears why)."""

from __future__ import annotations

import pytest

from app.engine.embedding.wire import EmbedInputs
from app.engine.embedding.worker import SHUTTING_DOWN, EmbeddingBusy, EmbeddingStartError, EmbeddingWorker
from app.serve.requests import ApiOptions
from app.serve.server import ApiServer
from app.testing.synthetic_embedding import write_tiny_embedding_model
from tests.serve.api_fixtures import client


@pytest.fixture(scope="module")
def embedding_file(tmp_path_factory):
    return write_tiny_embedding_model(tmp_path_factory.mktemp("tiny-embedding") / "tiny-embed.gguf")


@pytest.mark.slow
def test_the_embedding_routes_ask_for_the_key_as_every_route_does(embedding_file):
    worker = EmbeddingWorker(embedding_file, n_threads=1)
    worker.start()
    server = ApiServer(ApiOptions(port=0, api_key="sesame"), embedder=worker)
    server.start()
    try:
        with client() as anonymous, client("sesame") as keyed:
            refused = anonymous.post(f"{server.url}/v1/embeddings", json={"input": "the cat"})
            answered = keyed.post(f"{server.url}/v1/embeddings", json={"input": "the cat"})
            page = keyed.post(
                f"{server.url}/v1/embeddings", json={"input": "x"}, headers={"Origin": "https://example.com"}
            )
            models = keyed.get(f"{server.url}/v1/models").json()["data"]
    finally:
        server.stop()
        worker.close()
    assert refused.status_code == 401 and answered.status_code == 200 and page.status_code == 403
    assert [m["specchat"]["type"] for m in models if m["id"] == "tiny-embed"] == ["embedding"]


def test_a_full_queue_is_refused_and_a_closed_worker_says_so_at_once(embedding_file):
    worker = EmbeddingWorker(embedding_file, max_queued=1)  # not started: nothing is read, the queue fills
    waiting = worker.submit(lambda serial: EmbedInputs(serial, ("the cat",), truncate=True))
    with pytest.raises(EmbeddingBusy, match="Too many requests wait for the embedding model"):
        worker.submit(lambda serial: EmbedInputs(serial, ("the dog",), truncate=True))
    worker.start()
    assert worker.dim == 32
    assert waiting.result(timeout=60).vectors.shape == (1, 32)  # started, it reads what waited
    worker.close()
    with pytest.raises(EmbeddingStartError, match=SHUTTING_DOWN):
        worker.embed(["the cat"])
