"""What a question in a project's chat is sent with, found on a worker thread: the project's documents whole when
they fit comfortably, else the passages that match it (app.documents.question).

Finding them lists the project's files, may read them whole, may wait up to QUESTION_DEADLINE_S for the embedding
model's vector, and searches the index, so none of it runs on the GUI thread: DocumentsController.find_sources takes
a SourcesAsked there, runs `find_sources` on its question's thread (app.ui.widgets.background) and gets back one
FoundSources record, which it reads on the GUI thread (the notices, the Send it was stamped for). Plain Python:
`find_sources` runs on that thread alone, with its own connection to the index.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from app.documents.index import DocumentIndex
from app.documents.index_db import IndexFileError
from app.documents.question import DocsInput, retrieved_passages, whole_documents
from app.documents.walk import find_documents
from app.store.projects.sources import Source
from app.ui.projects.embedding import AskedVector, WindowEmbedder

# A folder of more files than these, or with more entries to walk, is taken as too large to go whole without
# reading further (retrieval answers it): the walk stays short whatever folder a project names.
WHOLE_MAX_FILES = 200
WHOLE_MAX_ENTRIES = 2_000


@dataclass(frozen=True)
class SourcesAsked:
    """One question's search, as the GUI thread saw it on Send: what the worker thread needs, nothing of the
    window's."""

    question: str
    roots: tuple[str, ...]  # the project's documents: files and folders
    budget: int  # the tokens the documents may take (app.documents.question.docs_budget)
    index_path: Path
    embedder: Optional[WindowEmbedder]  # the chosen embedding model (None: words alone)


@dataclass(frozen=True)
class FoundSources:
    """What the question is sent with, and what the GUI thread says of how it was found."""

    sources: tuple[Source, ...]
    retrieved: bool  # the documents did not fit whole: the index was searched for passages
    missed: str = ""  # why the embedding model did not embed the question ("": it did, or there is none)
    problem: str = ""  # the index could not be read (its sentence): the question goes without sources


def find_sources(asked: SourcesAsked) -> FoundSources:
    """The documents whole when they fit, else the question's passages. The question's thread only."""
    found = find_documents(list(asked.roots), max_documents=WHOLE_MAX_FILES, max_entries=WHOLE_MAX_ENTRIES)
    whole: Optional[DocsInput] = whole_documents(found.files, asked.budget) if found.files and found.complete else None
    if whole is not None:
        return FoundSources(whole.sources, retrieved=False)
    embedder = asked.embedder
    vector, missed = embedder.question_vector(asked.question) if embedder is not None else (None, "")
    try:
        with DocumentIndex(asked.index_path) as index:
            asked_vector = AskedVector(vector) if vector is not None else None
            docs = retrieved_passages(index, asked.question, asked.budget, list(asked.roots), embedder=asked_vector)
    except IndexFileError as exc:
        return FoundSources((), retrieved=True, missed=missed, problem=str(exc))
    return FoundSources(docs.sources, retrieved=True, missed=missed)
