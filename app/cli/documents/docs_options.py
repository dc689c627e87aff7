"""`generate --docs PATH` (a file or a folder, repeatable): the --chat message answered from documents.

When the documents' text fits comfortably in the context (half of what the reply leaves, and within what one
message may attach), it goes whole after the message, as `--attach` sends files. Otherwise the documents are
indexed (or the index refreshed: `specchat-cli index` does the same, into the same file) and the passages that
best match the question, within that half, are given to the model numbered, with the instruction to cite them.
`--json` lists them as "sources", in citation order.
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from app.cli.checks import UsageError
from app.cli.documents.embedding_option import add_embedding_argument, opened_embedder
from app.cli.documents.index_cmd import index_with_progress
from app.cli.terminal import printable
from app.documents.formats import DocumentError, read_document
from app.documents.index import DocumentIndex
from app.documents.index_db import IndexFileError, default_index_path
from app.documents.records import Embedder, Source
from app.documents.retrieval import prompt_block, question_with_passages, retrieve
from app.documents.walk import find_documents
from app.store.attachments import CHARS_PER_TOKEN, MAX_MESSAGE_ATTACHMENT_BYTES, Attachment, with_attachments

# A PDF's or a DOCX's bytes are mostly not text: documents this many times the budget's characters are not read
# whole to find out whether their text fits.
_BYTES_PER_TEXT_CHAR = 4


def add_docs_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--docs",
        metavar="PATH",
        action="append",
        default=[],
        help="answer the --chat message from these documents (a file or a folder, repeatable; text, Markdown, "
        "code, HTML, PDF, DOCX): put whole when they fit comfortably in the context, else indexed and the "
        "passages that match the question given numbered, for the reply to cite ([1], [2]); --json lists them "
        'as "sources"',
    )
    p.add_argument(
        "--docs-db",
        metavar="FILE",
        default=None,
        help=f"the documents index --docs uses (default: {default_index_path().name} in the data folder, as "
        "`specchat-cli index` builds it)",
    )
    add_embedding_argument(p)


@dataclass
class DocsInput:
    """What the documents add to the message: files put whole, or the retrieved passages' prompt block."""

    attachments: list[Attachment] = field(default_factory=list)
    sources: tuple[Source, ...] = ()
    prompt_block: str = ""

    def message(self, question: str) -> str:
        return question_with_passages(self.prompt_block, question)

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

    def source_lines(self) -> list[str]:
        """What the reply's [1], [2] point at, a line each, for the terminal: "[1] guide.md, page 3 (chars 10-900)"."""
        if not self.prompt_block:
            return []
        lines = []
        for source in self.sources:
            where = [source.path] + ([f"page {source.page}"] if source.page is not None else [])
            lines.append(f"[{source.number}] {', '.join(where)} (characters {source.start:,}-{source.end:,})")
        return lines


def read_docs(args: argparse.Namespace) -> DocsInput:
    """The --docs documents for the --chat message, whole or retrieved (by meaning too with --embedding); notes on
    stderr. Raises UsageError."""
    if not args.docs:
        return DocsInput()
    if args.chat is None:
        raise UsageError("--docs goes with --chat MESSAGE (the message is the question the documents answer)")
    budget = max(256, (args.ctx - args.max_tokens) // 2)
    found = find_documents(args.docs)
    if not found.files:
        reasons = "; ".join(note.sentence.rstrip(".") for note in found.notes)
        raise UsageError(f"--docs: no document to read ({reasons or 'no file a reader knows'})")
    whole = _whole(found.files, budget)
    if whole is not None:
        for note in found.notes:
            print(f"note: {printable(note.sentence)}", file=sys.stderr)
        return whole
    with opened_embedder(args) as (embedder, embedder_name):  # loaded only when the documents do not fit whole
        return _retrieved(args, budget, embedder, embedder_name)


def _whole(files: list[str], budget: int) -> Optional[DocsInput]:
    """The documents as attachments when their text fits `budget` tokens, else None."""
    try:
        raw = sum(os.stat(path).st_size for path in files)
    except OSError:
        return None  # one changed while looked at: the index says it in a sentence
    if raw > budget * CHARS_PER_TOKEN * _BYTES_PER_TEXT_CHAR:
        return None
    attachments: list[Attachment] = []
    sources: list[Source] = []
    chars = 0
    for path in files:
        try:
            document, _ = read_document(path)
        except DocumentError:
            return None  # the index says which and why, and goes on with the rest
        chars += len(document.text)
        if chars > budget * CHARS_PER_TOKEN or chars > MAX_MESSAGE_ATTACHMENT_BYTES:
            return None
        attachments.append(Attachment(Path(path).name, document.text))
        sources.append(Source(len(sources) + 1, path, 0, len(document.text), 1.0, document.text))
    return DocsInput(attachments, tuple(sources))


def _retrieved(args: argparse.Namespace, budget: int, embedder: Optional[Embedder], embedder_name: str) -> DocsInput:
    path = Path(args.docs_db) if args.docs_db else default_index_path()
    try:
        index = DocumentIndex(path)
    except IndexFileError as exc:
        raise UsageError(f"--docs-db: {exc}") from None
    with index:
        summary = index_with_progress(index, args.docs, sys.stderr, embedder=embedder, embedder_name=embedder_name)
        if summary.cancelled:
            raise KeyboardInterrupt
        retrieval = retrieve(index, args.chat, budget, roots=args.docs, embedder=embedder)
    if not retrieval.sources:
        print(
            "note: no passage of the documents matches the question's words; it is sent without them.", file=sys.stderr
        )
    return DocsInput([], retrieval.sources, retrieval.prompt_block if retrieval.sources else "")
