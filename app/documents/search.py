"""Ranking passages for a question: by its words (FTS5's bm25), by meaning (cosine of float32 vectors with numpy),
and the two rankings fused by reciprocal rank (each passage scores the sum of 1 / (RRF_K + its rank) over the
rankings it appears in), so neither score's scale needs calibrating against the other's.

Vectors are ranked with numpy over a BLOB column rather than sqlite-vec, which needs a Python whose sqlite3 loads
extensions (this machine's does not): a matrix product over 100,000 rows of 384 floats is a few milliseconds, and
the matrix is read once per open index (docs/performance-log.md has the figures).
"""

from __future__ import annotations

import re
from typing import Iterable, Optional

import numpy as np

from app.documents.index import DocumentIndex
from app.documents.records import Embedder

RRF_K = 60
CANDIDATES = 50  # taken from each ranking before fusing

# Words too common to tell passages apart; bm25 weighs them little, but an OR of them matches nearly everything.
_STOPWORDS = frozenset(
    "a an and are as at be by can do does for from how i if in into is it its me my of on or so than that the "
    "their them then there these they this to was we what when where which who why will with you your".split()
)


def keyword_query(question: str) -> str:
    """The FTS5 query for a question: its words, each quoted (no operator injection), any of them matching."""
    words = []
    for word in re.findall(r"\w+", question.lower()):
        if len(word) > 1 and word not in _STOPWORDS and word not in words:
            words.append(word)
    return " OR ".join(f'"{word}"' for word in words[:32])


def keyword_ranking(
    index: DocumentIndex, question: str, document_ids: Optional[list[int]] = None, limit: int = CANDIDATES
) -> list[int]:
    """Passage ids, best bm25 first; only in the documents `document_ids` when given."""
    query = keyword_query(question)
    if not query:
        return []
    sql = "SELECT w.rowid FROM passage_words w"
    params: list[object] = [query]
    if document_ids is not None:
        sql += " JOIN passages p ON p.id = w.rowid WHERE passage_words MATCH ? AND p.document_id IN (SELECT value FROM json_each(?))"
        params.append("[" + ",".join(str(int(i)) for i in document_ids) + "]")
    else:
        sql += " WHERE passage_words MATCH ?"
    sql += " ORDER BY bm25(passage_words, 2.0, 1.0) LIMIT ?"
    params.append(limit)
    return [row[0] for row in index.conn.execute(sql, params)]


def vector_ranking(
    index: DocumentIndex,
    question_vector: np.ndarray,
    document_ids: Optional[list[int]] = None,
    limit: int = CANDIDATES,
) -> list[int]:
    """Passage ids, most similar first (rows are unit length: the dot product is the cosine)."""
    ids, matrix = index.vectors()
    if not len(ids) or matrix.shape[1] != question_vector.shape[-1]:
        return []
    scores = matrix @ question_vector.astype(np.float32).reshape(-1)
    if document_ids is not None:
        allowed = _passages_of(index, document_ids)
        scores = np.where(np.isin(ids, allowed), scores, -np.inf)
    count = min(limit, len(ids))
    top = np.argpartition(-scores, count - 1)[:count]
    top = top[np.argsort(-scores[top])]
    return [int(ids[i]) for i in top if np.isfinite(scores[i])]


def _passages_of(index: DocumentIndex, document_ids: list[int]) -> np.ndarray:
    rows = index.conn.execute(
        "SELECT id FROM passages WHERE document_id IN (SELECT value FROM json_each(?))",
        ("[" + ",".join(str(int(i)) for i in document_ids) + "]",),
    ).fetchall()
    return np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))


def fuse(rankings: Iterable[list[int]], k: int = RRF_K) -> list[tuple[int, float]]:
    """Reciprocal-rank fusion: (passage id, score), best first; ties keep the first ranking's order."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, passage_id in enumerate(ranking, start=1):
            scores[passage_id] = scores.get(passage_id, 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda item: -item[1])


def search(
    index: DocumentIndex,
    question: str,
    embedder: Optional[Embedder] = None,
    document_ids: Optional[list[int]] = None,
    limit: int = CANDIDATES,
) -> list[tuple[int, float]]:
    """The passages for a question, fused from its words and (with an embedder) its meaning, best first."""
    rankings = [keyword_ranking(index, question, document_ids, limit)]
    if embedder is not None:
        vector = np.asarray(embedder.embed([question]), dtype=np.float32)[0]
        rankings.append(vector_ranking(index, vector, document_ids, limit))
    return fuse(rankings)
