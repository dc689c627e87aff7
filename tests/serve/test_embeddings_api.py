"""`specchat-cli serve --embedding` as a user runs it: OpenAI's SDK reads /v1/embeddings (floats and base64 alike),
/v1/models names the embedding model and its type, a reranker answers /v1/rerank in llama-server's shape, and each
bad request or bad file gets one sentence."""

from __future__ import annotations

import numpy as np
import openai
import pytest

from app.testing.synthetic_embedding import EMBED_CONTEXT, EMBED_DIM, write_tiny_embedding_model
from tests.serve.api_fixtures import DEADLINE_S, chat_body, client, serving_process
from tests.support.processes import run_cli

TEXTS = ["the cat sat on the mat", "the cat sat on a mat", "bread and cheese pizza"]


@pytest.fixture(scope="module")
def embedding_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-embedding")
    return write_tiny_embedding_model(folder / "tiny-embed.gguf"), write_tiny_embedding_model(
        folder / "tiny-rerank.gguf", reranker=True
    )


@pytest.fixture(scope="module")
def served(tiny_models, embedding_files):
    with serving_process("--target", tiny_models.target, "--embedding", embedding_files[0], "--parallel", 1) as serve:
        line = serve.lines.get(timeout=DEADLINE_S)
        assert "Embedding with tiny-embed.gguf (embedding, 32 dimensions)" in line, line
        yield serve.url
    assert serve.process.returncode == 0


def _sdk(url: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{url}/v1", api_key="none", timeout=DEADLINE_S, max_retries=0)


@pytest.mark.slow
def test_the_openai_sdk_reads_the_same_unit_vectors_as_floats_and_as_base64(served):
    sdk = _sdk(served)
    as_base64 = sdk.embeddings.create(model="tiny-embed", input=TEXTS)  # the SDK asks for base64 by default
    as_floats = sdk.embeddings.create(model="tiny-embed", input=TEXTS, encoding_format="float")
    vectors = np.array([row.embedding for row in as_floats.data], dtype=np.float32)
    assert vectors.shape == (3, EMBED_DIM) and [row.index for row in as_floats.data] == [0, 1, 2]
    assert np.allclose(np.array([row.embedding for row in as_base64.data]), vectors, atol=1e-6)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert as_floats.model == "tiny-embed" and as_floats.usage.prompt_tokens > len(TEXTS)
    one_by_one = [sdk.embeddings.create(model="m", input=t, encoding_format="float").data[0].embedding for t in TEXTS]
    assert np.allclose(np.array(one_by_one), vectors, atol=1e-5)
    assert float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])  # sharing words, closer
    # The chat model answers beside it on the same port.
    with client() as http:
        assert http.post(f"{served}/v1/chat/completions", json=chat_body("hi", max_tokens=4)).status_code == 200
    models = {m.id: m for m in sdk.models.list().data}
    assert models["tiny-embed"].model_extra["specchat"]["type"] == "embedding" and "tiny-target" in models


@pytest.mark.slow
def test_ollamas_clients_read_the_same_vectors_in_ollamas_shapes(served):
    sdk = _sdk(served)
    openai_rows = [row.embedding for row in sdk.embeddings.create(model="m", input=TEXTS, encoding_format="float").data]
    with client() as http:
        embed = http.post(f"{served}/api/embed", json={"model": "nomic-embed-text", "input": TEXTS}).json()
        legacy = http.post(f"{served}/api/embeddings", json={"model": "nomic-embed-text", "prompt": TEXTS[0]}).json()
        cut = http.post(f"{served}/api/embed", json={"model": "m", "input": "word " * (EMBED_CONTEXT * 2)})
        kept = http.post(f"{served}/api/embed", json={"input": "word " * (EMBED_CONTEXT * 2), "truncate": False})
    assert np.allclose(embed["embeddings"], openai_rows, atol=1e-6) and embed["prompt_eval_count"] > len(TEXTS)
    assert np.allclose(legacy["embedding"], openai_rows[0], atol=1e-6)
    assert cut.status_code == 200 and len(cut.json()["embeddings"][0]) == EMBED_DIM
    assert kept.status_code == 400 and "more than the 128 the model reads at once" in kept.json()["error"]


@pytest.mark.slow
def test_bad_embedding_requests_get_a_400_with_one_sentence(served):
    sdk = _sdk(served)
    refusals = {
        "empty list": ({"input": []}, '"input" must be a non-empty string'),
        "empty text": ({"input": ""}, "Input 0 must be a non-empty string"),
        "too long": ({"input": "word " * (EMBED_CONTEXT * 2)}, f"more than the {EMBED_CONTEXT} the model reads"),
        "unknown token": ({"input": [[10**6]]}, "is not in the model's vocabulary"),
        "dimensions": ({"input": "hi", "dimensions": 8}, "have 32 dimensions; it cannot make 8"),
        "encoding": ({"input": "hi", "encoding_format": "int8"}, '"encoding_format" must be "float" or "base64"'),
    }
    for name, (fields, sentence) in refusals.items():
        with pytest.raises(openai.BadRequestError) as refused:
            sdk.embeddings.create(model="tiny-embed", **fields)
        assert sentence in refused.value.body["message"], name
        assert refused.value.body["message"].count(". ") == 0, name  # one sentence
    with client() as http:
        answer = http.post(f"{served}/v1/rerank", json={"query": "a", "documents": ["b"]})
    assert answer.status_code == 501 and "not a reranker" in answer.json()["error"]["message"]


@pytest.mark.slow
def test_a_reranker_orders_documents_in_llama_servers_shape(tiny_models, embedding_files):
    with serving_process("--target", tiny_models.target, "--embedding", embedding_files[1], "--parallel", 1) as serve:
        with client() as http:
            body = {"model": "tiny-rerank", "query": "the cat", "documents": ["the cat sat", "bread", "a dog"]}
            ranked = http.post(f"{serve.url}/v1/rerank", json={**body, "top_n": 2}).json()
            again = http.post(f"{serve.url}/rerank", json=body).json()
            embedded = http.post(f"{serve.url}/v1/embeddings", json={"input": "the cat"})
            empty = http.post(f"{serve.url}/v1/rerank", json={**body, "documents": []})
    scores = [r["relevance_score"] for r in again["results"]]
    assert scores == sorted(scores, reverse=True) and sorted(r["index"] for r in again["results"]) == [0, 1, 2]
    assert ranked["results"] == again["results"][:2] and ranked["usage"]["prompt_tokens"] > 0
    assert embedded.status_code == 400 and "is a reranker" in embedded.json()["error"]["message"]
    assert empty.status_code == 400 and empty.json()["error"]["message"].startswith('"documents" must be')


@pytest.mark.slow
def test_a_chat_model_or_a_missing_file_as_embedding_model_is_one_sentence(tiny_models, embedding_files, tmp_path):
    chat = run_cli(
        "serve", "--target", tiny_models.target, "--embedding", tiny_models.draft, "--port", "0", timeout=120
    )
    assert chat.returncode == 1
    assert chat.stderr.strip().splitlines()[-1] == (
        "error: tiny-draft.gguf is a chat model, not an embedding model: --embedding takes a model such as "
        "nomic-embed-text or bge-small (Get models offers one)."
    )
    missing = run_cli("serve", "--target", tiny_models.target, "--embedding", tmp_path / "absent.gguf", timeout=120)
    assert missing.returncode == 2 and "error: --embedding: there is no file at" in missing.stderr
    swapped = run_cli("serve", "--target", embedding_files[0], "--port", "0", timeout=120)
    assert swapped.returncode == 2 and swapped.stderr.strip().splitlines()[-1] == (
        "error: target: tiny-embed.gguf is an embedding model, not a chat model: serve --embedding takes it"
    )
    assert "Traceback" not in chat.stderr + missing.stderr + swapped.stderr
