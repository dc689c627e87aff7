"""Building and refreshing an index for the paths a person names, file by file.

A file whose size and time are as indexed is left alone; one whose size or time changed is hashed, and only one
whose content changed is read again. A file gone from a folder walked to its end is removed with everything indexed
of it. A file that cannot be read this time gets one sentence (an `IndexNote`) and indexing goes on with the rest;
what was indexed of it before stays until it reads again (or is gone). Progress goes to a callback as
`IndexProgress` records, and `cancelled()` is asked between files and between batches of passages.
"""

from __future__ import annotations

import os
from typing import Callable, Optional

import numpy as np

from app.documents.formats import DocumentError, read_document
from app.documents.index import DocumentIndex
from app.documents.passages import split_passages
from app.documents.records import Embedder, IndexNote, IndexProgress, IndexSummary
from app.documents.walk import MAX_DOCUMENTS, find_documents

EMBED_BATCH = 32  # passages embedded at once: what an embedding model holds in one batch


def _never() -> bool:
    return False


def refresh(
    index: DocumentIndex,
    paths: list[str],
    embedder: Optional[Embedder] = None,
    embedder_name: str = "",
    progress: Optional[Callable[[IndexProgress], None]] = None,
    cancelled: Callable[[], bool] = _never,
    max_documents: int = MAX_DOCUMENTS,
) -> IndexSummary:
    """Index the files at `paths` (files and folders) into `index`, and say what changed."""
    roots = [os.path.abspath(p) for p in paths]
    found = find_documents(roots, max_documents=max_documents)
    notes = list(found.notes)
    if embedder is not None:
        index.use_embedder(embedder_name or type(embedder).__name__)
    known = index.documents(roots)
    counts = {"added": 0, "changed": 0, "unchanged": 0, "removed": 0, "passages": 0}
    total = len(found.files)
    for done, path in enumerate(found.files):
        if cancelled():
            return _summary(counts, notes, cancelled=True)
        if progress is not None:
            progress(IndexProgress(done, total, path))
        try:
            outcome = _index_file(index, path, known.get(path), embedder, cancelled, counts)
        except DocumentError as exc:
            notes.append(IndexNote(path, str(exc)))
            if not os.path.exists(path) and path in known:
                index.remove_document(path)
                counts["removed"] += 1
            continue
        if outcome == "cancelled":
            return _summary(counts, notes, cancelled=True)
        counts[outcome] += 1
    if progress is not None:
        progress(IndexProgress(total, total, ""))
    walked = set(found.files)
    for path in known:
        if path not in walked and (found.complete or not os.path.exists(path)):
            index.remove_document(path)
            counts["removed"] += 1
    return _summary(counts, notes, cancelled=False)


def _summary(counts: dict[str, int], notes: list[IndexNote], cancelled: bool) -> IndexSummary:
    return IndexSummary(cancelled=cancelled, notes=tuple(notes), **counts)


def _index_file(index, path, indexed, embedder, cancelled, counts) -> str:
    """ "added", "changed", "unchanged" or "cancelled". Raises DocumentError."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        raise DocumentError(f"{path} was removed while it was being indexed; it was skipped.") from None
    except OSError as exc:
        raise DocumentError(f"{path} could not be read ({exc.strerror or exc}); it was skipped.") from None
    if indexed is not None and (indexed.size, indexed.mtime_ns) == (info.st_size, info.st_mtime_ns):
        return _fill_vectors(index, indexed.id, embedder, cancelled) or "unchanged"
    document, digest = read_document(path)
    if indexed is not None and indexed.sha256 == digest:
        index.touch(indexed.id, info.st_size, info.st_mtime_ns)
        return _fill_vectors(index, indexed.id, embedder, cancelled) or "unchanged"
    passages = split_passages(document)
    vectors = None
    if embedder is not None:
        parts = []
        for first in range(0, len(passages), EMBED_BATCH):
            if cancelled():
                return "cancelled"
            batch = [p.text for p in passages[first : first + EMBED_BATCH]]
            parts.append(np.asarray(embedder.embed(batch), dtype=np.float32))
        vectors = np.concatenate(parts) if parts else None
    index.write_document(document, info.st_size, info.st_mtime_ns, digest, passages, vectors)
    counts["passages"] += len(passages)
    return "changed" if indexed is not None else "added"


def _fill_vectors(index, document_id, embedder, cancelled) -> Optional[str]:
    """Vectors for a kept document's passages that have none (indexed without an embedder, or another's)."""
    if embedder is None:
        return None
    missing = index.passages_without_vectors(document_id)
    for first in range(0, len(missing), EMBED_BATCH):
        if cancelled():
            return "cancelled"
        batch = missing[first : first + EMBED_BATCH]
        index.add_vectors([pid for pid, _ in batch], np.asarray(embedder.embed([t for _, t in batch])))
    return None
