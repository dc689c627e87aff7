"""The documents' plain records: a document's text as read, its passages, indexing progress, notes and sources.

Frozen dataclasses, so the CLI, the window and the tests read meaning from fields, never from prose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Optional, Protocol

import numpy as np

from app.store.projects.sources import Source

__all__ = ["DocumentText", "Embedder", "IndexNote", "IndexProgress", "IndexSummary", "Passage", "Source"]

# What a document is read as: it decides how it is split (headings, functions, pages).
DocumentKind = Literal["text", "markdown", "code", "html", "pdf", "docx"]


class Embedder(Protocol):
    """Turns texts into vectors: one row per text, float32, each row of length 1 (cosine = dot product)."""

    def embed(self, texts: list[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class DocumentText:
    """A document's text as SpecChat reads it. `page_starts`: the character offset where each page begins (PDF),
    empty for a document without pages. Passages' offsets count characters of `text`."""

    path: str
    kind: DocumentKind
    text: str
    page_starts: tuple[int, ...] = ()

    def page_at(self, offset: int) -> Optional[int]:
        """The page (1-based) holding the character at `offset`, or None for a document without pages."""
        if not self.page_starts:
            return None
        page = 0
        for number, start in enumerate(self.page_starts):
            if start <= offset:
                page = number
            else:
                break
        return page + 1


@dataclass(frozen=True)
class Passage:
    """A piece of a document cut along its structure: characters [start, end) of its text, with the heading or the
    function it sits under ("Install > Linux", "def mean") and its page where the document has pages."""

    start: int
    end: int
    text: str
    heading: str = ""
    page: Optional[int] = None


@dataclass(frozen=True)
class IndexNote:
    """A file left out of this indexing, or one that changed what was indexed: the path and one sentence."""

    path: str
    sentence: str


@dataclass(frozen=True)
class IndexProgress:
    """Where indexing stands: files done of `total` (known once the folders were walked), the file being read."""

    done: int
    total: int
    current: str

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


@dataclass(frozen=True)
class IndexSummary:
    """What one refresh did: files added, changed, unchanged and removed, passages written, and the notes."""

    added: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    passages: int = 0
    cancelled: bool = False
    notes: tuple[IndexNote, ...] = field(default=())
