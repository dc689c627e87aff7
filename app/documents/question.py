"""What documents add to one question, the one decision the CLI (`generate --docs`) and the window share: the
documents whole when their text fits comfortably (half of what the reply leaves of the context, and within what one
message may attach), else the question's passages from the index, numbered for the reply to cite.

`DocsInput` also rebuilds the same message from the sources kept with a question, so a regenerated reply reads what
the first one read.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Optional

from app.documents.formats import DocumentError, read_document
from app.documents.index import DocumentIndex
from app.documents.records import Embedder, Source
from app.documents.retrieval import prompt_block, question_with_passages, retrieve
from app.store.attachments import CHARS_PER_TOKEN, MAX_MESSAGE_ATTACHMENT_BYTES, Attachment, with_attachments

# A PDF's or a DOCX's bytes are mostly not text: documents this many times the budget's characters are not read
# whole to find out whether their text fits.
BYTES_PER_TEXT_CHAR = 4
MIN_BUDGET_TOKENS = 256


def docs_budget(n_ctx: int, max_tokens: int) -> int:
    """The tokens documents may take of a context of `n_ctx`: half of what a reply of `max_tokens` leaves, so the
    chat and the answer keep the other half."""
    return max(MIN_BUDGET_TOKENS, (n_ctx - max_tokens) // 2)


@dataclass
class DocsInput:
    """What the documents add to the message: files put whole (`attachments`, each also a source), or the retrieved
    passages' prompt block."""

    attachments: list[Attachment] = field(default_factory=list)
    sources: tuple[Source, ...] = ()
    prompt_block: str = ""

    @property
    def whole(self) -> bool:
        return bool(self.attachments)

    def message(self, question: str) -> str:
        """The question with the passages (the whole documents are attached after it: `text`)."""
        return question_with_passages(self.prompt_block, question)

    def text(self, question: str) -> str:
        """The user message the model reads: the passages and the question, then the documents put whole."""
        return with_attachments(self.message(question), self.attachments)

    def chat(
        self,
        system: str,
        question: str,
        attachments: list[Attachment],
        content: Callable[[str], object],
        fits: Callable[[list[dict]], bool],
    ) -> list[dict]:
        """The chat's messages: `system` (if any), then `question` with the documents and `attachments` (`content`
        makes the message's content from its text). Retrieved passages are left out, the last first, until `fits`
        (the engine's own count of the prompt, where retrieval's budget only estimated tokens from characters:
        code and some scripts take more tokens a character); documents put whole are left as they are, for the
        context's check to refuse in a sentence."""
        head = [{"role": "system", "content": system}] if system else []

        def messages() -> list[dict]:
            text = with_attachments(self.message(question), attachments + self.attachments)
            return head + [{"role": "user", "content": content(text)}]

        while self.prompt_block and len(self.sources) > 1 and not fits(messages()):
            self.sources = self.sources[:-1]
            self.prompt_block = prompt_block(self.sources)
        return messages()

    @classmethod
    def from_sources(cls, sources: Iterable[Source]) -> DocsInput:
        """The input that gave the model `sources` (as kept with its question): documents whole, or passages."""
        chosen = tuple(sources)
        if chosen and chosen[0].whole:
            return cls([Attachment(Path(s.path).name, s.text) for s in chosen], chosen)
        return cls([], chosen, prompt_block(chosen) if chosen else "")


def whole_documents(files: list[str], budget: int) -> Optional[DocsInput]:
    """The documents as attachments when their text fits `budget` tokens, else None (also when one cannot be read:
    the index says which and why, and goes on with the rest)."""
    try:
        raw = sum(os.stat(path).st_size for path in files)
    except OSError:
        return None  # one changed while looked at: the index says it in a sentence
    if raw > budget * CHARS_PER_TOKEN * BYTES_PER_TEXT_CHAR:
        return None
    attachments: list[Attachment] = []
    sources: list[Source] = []
    chars = 0
    for path in files:
        try:
            document, _ = read_document(path)
        except DocumentError:
            return None
        chars += len(document.text)
        if chars > budget * CHARS_PER_TOKEN or chars > MAX_MESSAGE_ATTACHMENT_BYTES:
            return None
        attachments.append(Attachment(Path(path).name, document.text))
        sources.append(Source(len(sources) + 1, path, 0, len(document.text), 1.0, document.text, whole=True))
    return DocsInput(attachments, tuple(sources))


def retrieved_passages(
    index: DocumentIndex, question: str, budget: int, roots: list[str], embedder: Optional[Embedder] = None
) -> DocsInput:
    """The question's passages from the documents under `roots` within `budget` tokens (none: no passage matches)."""
    retrieval = retrieve(index, question, budget, roots=roots, embedder=embedder)
    return DocsInput([], retrieval.sources, retrieval.prompt_block if retrieval.sources else "")
