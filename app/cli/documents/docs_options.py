"""`generate --docs PATH` (a file or a folder, repeatable): the --chat message answered from documents.

When the documents' text fits comfortably in the context (half of what the reply leaves, and within what one
message may attach), it goes whole after the message, as `--attach` sends files. Otherwise the documents are
indexed (or the index refreshed: `specchat-cli index` does the same, into the same file) and the passages that
best match the question, within that half, are given to the model numbered, with the instruction to cite them.
`--json` lists them as "sources", in citation order.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional

from app.cli.checks import UsageError
from app.cli.documents.embedding_option import add_embedding_argument, opened_embedder
from app.cli.documents.index_cmd import index_with_progress
from app.cli.terminal import printable
from app.documents.index import DocumentIndex
from app.documents.index_db import IndexFileError, default_index_path
from app.documents.question import DocsInput, docs_budget, retrieved_passages, whole_documents
from app.documents.records import Embedder
from app.documents.walk import find_documents


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


def source_lines(docs: DocsInput) -> list[str]:
    """What the reply's [1], [2] point at, a line each, for the terminal: "[1] guide.md, page 3 (chars 10-900)"."""
    if not docs.prompt_block:
        return []
    lines = []
    for source in docs.sources:
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
    budget = docs_budget(args.ctx, args.max_tokens)
    found = find_documents(args.docs)
    if not found.files:
        reasons = "; ".join(note.sentence.rstrip(".") for note in found.notes)
        raise UsageError(f"--docs: no document to read ({reasons or 'no file a reader knows'})")
    whole = whole_documents(found.files, budget)
    if whole is not None:
        for note in found.notes:
            print(f"note: {printable(note.sentence)}", file=sys.stderr)
        return whole
    with opened_embedder(args) as (embedder, embedder_name):  # loaded only when the documents do not fit whole
        return _retrieved(args, budget, embedder, embedder_name)


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
        docs = retrieved_passages(index, args.chat, budget, roots=args.docs, embedder=embedder)
    if not docs.sources:
        print(
            "note: no passage of the documents matches the question's words; it is sent without them.", file=sys.stderr
        )
    return docs
