"""Time a question's retrieval from a documents index of 10,000 or 100,000 passages, and its size on disk.

    python -m tests.perf.documents_retrieval DEST [--passages 10000] [--dim 384]

Builds DEST/documents-N.db through the index's own API (passages of ~1,200 characters of Zipf-distributed words,
10 to a document, each with a random unit vector of `dim` floats, as an embedding model's would be), then times,
over 30 questions: the cold first question (opening the file and reading every vector), and warm ones by words
(FTS5 bm25), by vector (numpy over the matrix) and both fused with the passages fetched and numbered
(`retrieve`). Embedding the question is left out: that is the embedding model's time, measured with it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

import numpy as np

from app.documents.index import DocumentIndex
from app.documents.records import DocumentText, Passage
from app.documents.retrieval import retrieve
from app.documents.search import keyword_ranking, vector_ranking

PASSAGES_PER_DOCUMENT = 10


class RandomEmbedder:
    """A question's vector: random, of the index's width (what is timed is the ranking, not the model)."""

    def __init__(self, dim: int, seed: int = 7):
        self.dim = dim
        self.rng = np.random.default_rng(seed)

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def _vocabulary(rng: np.random.Generator, size: int = 20_000) -> list[str]:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    return ["".join(rng.choice(letters, int(rng.integers(3, 10)))) for _ in range(size)]


def build(path: Path, passages: int, dim: int) -> None:
    rng = np.random.default_rng(1)
    words = _vocabulary(rng)
    zipf = np.minimum(rng.zipf(1.2, size=passages * 220), len(words)) - 1
    index = DocumentIndex(path)
    index.conn.execute("PRAGMA synchronous = OFF")  # a throwaway file: no sync per document
    index.use_embedder(f"random-{dim}")
    cursor = 0
    for number in range(passages // PASSAGES_PER_DOCUMENT):
        parts, texts = [], []
        offset = 0
        for _ in range(PASSAGES_PER_DOCUMENT):
            text = " ".join(words[i] for i in zipf[cursor : cursor + 200])[:1200]
            cursor += 200
            parts.append(Passage(offset, offset + len(text), text, f"Section {len(parts) + 1}"))
            texts.append(text)
            offset += len(text) + 2
        vectors = rng.standard_normal((PASSAGES_PER_DOCUMENT, dim)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        document = DocumentText(f"/bench/doc{number:06}.md", "markdown", "\n\n".join(texts))
        index.write_document(document, offset, 0, f"{number:064x}", parts, vectors)
    index.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    index.close()


def _ms(seconds: list[float]) -> str:
    return f"median {statistics.median(seconds) * 1000:.1f} ms, max {max(seconds) * 1000:.1f} ms"


def measure(path: Path, dim: int) -> None:
    rng = np.random.default_rng(3)
    words = _vocabulary(np.random.default_rng(1))
    questions = [" ".join(rng.choice(words[:2000], 6)) + "?" for _ in range(30)]
    embedder = RandomEmbedder(dim)
    started = time.perf_counter()
    index = DocumentIndex(path)
    retrieve(index, questions[0], 1500, embedder=embedder)
    cold = time.perf_counter() - started
    by_words, by_vector, fused = [], [], []
    for question in questions:
        vector = embedder.embed([question])[0]
        started = time.perf_counter()
        keyword_ranking(index, question)
        by_words.append(time.perf_counter() - started)
        started = time.perf_counter()
        vector_ranking(index, vector)
        by_vector.append(time.perf_counter() - started)
        started = time.perf_counter()
        sources = retrieve(index, question, 1500, embedder=embedder).sources
        fused.append(time.perf_counter() - started)
    size = path.stat().st_size
    count = index.passage_count()
    index.close()
    print(f"{count:,} passages, {dim} floats each: {size / 1e6:.1f} MB on disk ({size / count:,.0f} bytes a passage)")
    print(f"cold first question (open, read the vectors, retrieve): {cold * 1000:.1f} ms")
    print(f"by words (FTS5 bm25, 50 best):  {_ms(by_words)}")
    print(f"by vector (numpy, 50 best):     {_ms(by_vector)}")
    print(f"retrieve (both, fused, fetched, {len(sources)} sources): {_ms(fused)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("dest", type=Path)
    parser.add_argument("--passages", type=int, default=10_000)
    parser.add_argument("--dim", type=int, default=384)
    args = parser.parse_args()
    path = args.dest / f"documents-{args.passages}-{args.dim}.db"
    if not path.exists():
        args.dest.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        build(path, args.passages, args.dim)
        print(f"built in {time.perf_counter() - started:.1f} s (pid {os.getpid()})")
    measure(path, args.dim)


if __name__ == "__main__":
    main()
