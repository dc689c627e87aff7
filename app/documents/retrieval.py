"""A question's passages: the best that fit a token budget, numbered [1], [2]... in the order the model reads
them, the prompt block that gives them to the model with the instruction to cite them, and the record of which
sources were used (what `generate --json` lists and what the window links [1] to).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Iterable, Optional

from app.documents.index import DocumentIndex
from app.documents.records import Embedder, Source
from app.documents.search import search
from app.store.attachments import CHARS_PER_TOKEN

MAX_SOURCES = 12

INSTRUCTION = (
    "Answer from the numbered passages below. Cite each passage you use by its number in square brackets, as [1] "
    "or [2], right after what it supports. If the passages do not hold the answer, say so."
)

REMINDER = (
    "Answer the question itself from the passages above, in sentences and with code where it helps. Then end with "
    'the numbers of the passages you used, as "Sources: [1], [3]".'
)

# What a keyword search alone misses, said once where no embedding model is loaded.
NO_EMBEDDER_SENTENCE = (
    "No embedding model is loaded, so passages are found by their words alone; an embedding model would also find "
    "passages that say the same thing in other words."
)


@dataclass(frozen=True)
class Retrieval:
    """The sources given to the model, in citation order, and the block of the prompt that holds them."""

    sources: tuple[Source, ...]
    prompt_block: str
    by_meaning: bool

    def message(self, question: str) -> str:
        """The user message the model reads: the numbered passages, then the question."""
        return question_with_passages(self.prompt_block if self.sources else "", question)


def question_with_passages(prompt_block: str, question: str) -> str:
    """The passages' block, the question, and a reminder to cite after it: a small model follows the instruction
    nearest its reply (the 1.5B cited nothing with the instruction above the passages alone)."""
    if not prompt_block:
        return question
    return f"{prompt_block}\n\nQuestion: {question}\n\n{REMINDER}"


def estimate_tokens(text: str) -> int:
    return round(len(text) / CHARS_PER_TOKEN)


def _label(source: Source) -> str:
    where = [source.path]
    if source.heading:
        where.append(f'"{source.heading}"')
    if source.page is not None:
        where.append(f"page {source.page}")
    return f"[{source.number}] " + ", ".join(where)


def prompt_block(sources: Iterable[Source]) -> str:
    """The instruction and each passage under its number, path, heading and page."""
    parts = [INSTRUCTION]
    for source in sources:
        parts.append(f"{_label(source)}\n{source.text.strip()}")
    return "\n\n".join(parts)


def retrieve(
    index: DocumentIndex,
    question: str,
    token_budget: int,
    roots: Optional[list[str]] = None,
    embedder: Optional[Embedder] = None,
) -> Retrieval:
    """The best passages for `question` (in the documents under `roots` when given) that fit `token_budget`."""
    document_ids = index.document_ids([os.path.abspath(r) for r in roots]) if roots is not None else None
    ranked = search(index, question, embedder, document_ids)
    stored = index.passages([pid for pid, _ in ranked[: MAX_SOURCES * 4]])
    chosen: list[Source] = []
    used = estimate_tokens(INSTRUCTION)
    for passage_id, score in ranked:
        passage = stored.get(passage_id)
        if passage is None:
            continue
        cost = estimate_tokens(passage.text) + 16  # its label and the blank line
        if used + cost > token_budget:
            continue  # a shorter one further down may still fit
        used += cost
        chosen.append(
            Source(
                len(chosen) + 1,
                passage.path,
                passage.start,
                passage.end,
                round(score, 6),
                passage.text,
                passage.heading,
                passage.page,
                by_meaning=embedder is not None,
            )
        )
        if len(chosen) >= MAX_SOURCES:
            break
    return Retrieval(tuple(chosen), prompt_block(chosen), embedder is not None)
