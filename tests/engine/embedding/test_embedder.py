"""Embedding models through llama.cpp, as the documents' index and the API use them: vectors of the model's
dimension, of length 1, the same for a text whoever it is read with, and texts that share words closer than texts
that do not (the tiny model's random weights keep that much: its layers add little to the token embeddings)."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.embedding.model import Embedder
from app.engine.errors import ModelFileError
from app.engine.gguf.info import inspect_gguf
from app.library import inspect_entry
from app.testing.synthetic_embedding import EMBED_CONTEXT, EMBED_DIM, write_tiny_embedding_model

TEXTS = ["the cat sat on the mat", "the cat sat on a mat", "bread and cheese pizza", "a dog by the river"]


@pytest.fixture(scope="module")
def tiny_embedding(tmp_path_factory):
    folder = tmp_path_factory.mktemp("tiny-embedding")
    return write_tiny_embedding_model(folder / "tiny-embed.gguf"), write_tiny_embedding_model(
        folder / "tiny-rerank.gguf", reranker=True
    )


@pytest.fixture(scope="module")
def embedder(tiny_embedding):
    model = Embedder(tiny_embedding[0], n_threads=1)
    yield model
    model.close()


def test_texts_become_unit_vectors_of_the_models_dimension(embedder):
    vectors = embedder.embed(TEXTS)
    assert embedder.dim == EMBED_DIM and embedder.kind == "embedding"
    assert vectors.shape == (len(TEXTS), EMBED_DIM) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_batch_reads_each_text_as_it_is_read_alone_and_again_the_same(embedder):
    batch = embedder.embed(TEXTS)
    alone = np.stack([embedder.embed([text])[0] for text in TEXTS])
    assert np.allclose(batch, alone, atol=1e-5)
    assert np.array_equal(batch, embedder.embed(TEXTS))


def test_texts_that_share_words_are_closer_than_texts_that_do_not(embedder):
    cat, cat_again, bread, _ = embedder.embed(TEXTS)
    assert float(cat @ cat_again) > float(cat @ bread) + 0.3


def test_a_text_longer_than_the_context_is_cut_and_the_cut_is_counted(embedder):
    read = embedder.embeddings(["the cat", "word " * (EMBED_CONTEXT * 2)])
    assert read.cut[0] == 0 and read.cut[1] > EMBED_CONTEXT
    assert read.vectors.shape == (2, EMBED_DIM)
    with pytest.raises(ValueError, match="more than the 128 the model reads at once"):
        embedder.embeddings(["word " * (EMBED_CONTEXT * 2)], truncate=False)


def test_token_ids_are_read_as_given_and_ids_outside_the_vocabulary_refused(embedder):
    tokens = embedder.tokenize("the cat sat on the mat")
    assert np.allclose(embedder.embeddings([tokens]).vectors[0], embedder.embed([TEXTS[0]])[0], atol=1e-5)
    with pytest.raises(ValueError, match="not in the model's vocabulary"):
        embedder.embeddings([[10**6]])


def test_a_reranker_scores_each_document_for_the_query(tiny_embedding):
    reranker = Embedder(tiny_embedding[1], n_threads=1)
    try:
        scores = reranker.rank("the cat", ["the cat sat", "bread", "a dog"]).vectors
        assert reranker.kind == "reranker" and scores.shape == (3, 1)
        assert np.array_equal(scores, reranker.rank("the cat", ["the cat sat", "bread", "a dog"]).vectors)
        assert len(set(scores[:, 0].tolist())) == 3  # raw scores, not normalised to +-1
    finally:
        reranker.close()


def test_a_chat_model_or_a_missing_file_is_refused_with_one_sentence(tiny_models, tmp_path):
    with pytest.raises(ModelFileError, match=r"^tiny-target.gguf is a chat model, not an embedding model: "):
        Embedder(tiny_models.target)
    with pytest.raises(ModelFileError, match="There is no model file at"):
        Embedder(tmp_path / "absent.gguf")


def test_the_library_lists_an_embedding_model_but_offers_it_for_no_chat(tiny_embedding, tiny_models):
    embedding, reranker = tiny_embedding
    assert inspect_gguf(embedding).kind == "embedding" and inspect_gguf(reranker).kind == "reranker"
    assert inspect_gguf(tiny_models.target).kind == "chat"
    entry = inspect_entry(embedding)
    assert entry.kind == "embedding" and not entry.usable
    assert entry.problem.startswith("An embedding model: it turns text into vectors")
    assert inspect_entry(tiny_models.target).usable


@pytest.mark.slow  # a CLI process of its own
def test_inspect_says_what_an_embedding_model_is_for(tiny_embedding):
    from tests.support.processes import run_cli

    shown = run_cli("inspect", tiny_embedding[0], timeout=120)
    assert shown.returncode == 0
    assert "note: tiny-embed.gguf: An embedding model: it turns text into vectors" in shown.stdout
