"""A real embedding model (all-MiniLM-L6-v2, BERT, mean pooling) read through the Embedder: texts that mean the same
are closer than texts that do not, a batch reads as one by one, and a passage longer than its 512 tokens is cut and
counted. The model is converted from its PyPI wheel by tests/support/real_embedding.py (.ci/run does it); where it is
absent the tests skip, or fail under SPECCHAT_REQUIRE_REAL_MODELS=1 (the `real_embedding_model` fixture)."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.embedding.model import Embedder

pytestmark = pytest.mark.real_models


@pytest.fixture(scope="module")
def minilm(real_embedding_model):
    model = Embedder(real_embedding_model, n_threads=1)
    yield model
    model.close()


def test_texts_that_mean_the_same_are_closer_than_texts_that_do_not(minilm):
    cat, kitten, stocks = minilm.embed(
        ["The cat sits on the mat.", "A kitten rests on a rug.", "Stock markets fell sharply today."]
    )
    assert minilm.dim == 384
    assert float(cat @ kitten) > float(cat @ stocks) + 0.3


def test_a_batch_reads_as_one_by_one_and_a_long_passage_is_cut_and_counted(minilm):
    texts = ["How do I reset my password?", "Open Settings, then Account, then Reset.", "word " * 700]
    read = minilm.embeddings(texts)
    alone = np.stack([minilm.embed([text])[0] for text in texts])
    assert np.allclose(read.vectors, alone, atol=1e-4)
    assert read.cut[:2] == (0, 0) and read.cut[2] == 702 - 512
