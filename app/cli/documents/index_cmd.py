"""`specchat-cli index PATH... [--db FILE]`: build or refresh a documents index, with a progress bar.

Files whose size and time are as indexed are left alone, changed ones read again, and files gone from a folder
removed with everything indexed of them. A file that cannot be indexed is one "note:" line on stderr and indexing
goes on. Ctrl-C stops between files: what was indexed stays, and the same command goes on from there.

Exit status: 0 done (notes or not), 2 nothing to index or an index file that cannot be used, 130 interrupted.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Callable, Optional, TextIO

from app.common.progress_line import ProgressLine, bar
from app.cli.checks import UsageError
from app.cli.documents.embedding_option import add_embedding_argument, opened_embedder
from app.cli.terminal import printable, say_error
from app.common.units import plural
from app.documents.index import DocumentIndex
from app.documents.index_db import IndexFileError, default_index_path
from app.documents.indexer import refresh
from app.documents.records import Embedder, IndexProgress, IndexSummary
from app.documents.retrieval import NO_EMBEDDER_SENTENCE


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "index",
        help="build or refresh a documents index (text, Markdown, code, HTML, PDF, DOCX) for generate --docs",
        description="Index files and folders for `generate --docs`: passages cut along headings, functions and "
        "pages, searchable by their words. A refresh reads again only what changed, and forgets files that are "
        "gone. Ctrl-C stops between files and keeps what was indexed.",
    )
    p.add_argument("paths", nargs="+", metavar="PATH", help="a file or a folder (walked, hidden entries left out)")
    p.add_argument(
        "--db",
        metavar="FILE",
        default=None,
        help=f"the index file (default: {default_index_path().name} in the data folder)",
    )
    add_embedding_argument(p)
    p.set_defaults(func=run)


def describe(progress: IndexProgress) -> str:
    """ "[####----]  40%  4/10 files  guide.pdf"."""
    name = os.path.basename(progress.current)
    return f"{bar(progress.fraction)}  {progress.done:,}/{progress.total:,} files  {printable(name)}".rstrip()


def summary_text(summary: IndexSummary, index: DocumentIndex) -> str:
    files = summary.added + summary.changed + summary.unchanged
    return (
        f"Indexed {plural(files, 'file')} ({summary.added:,} added, {summary.changed:,} changed, "
        f"{summary.unchanged:,} unchanged, {summary.removed:,} removed): {plural(index.passage_count(), 'passage')} in "
        f"{index.path}."
    )


def index_with_progress(
    index: DocumentIndex,
    paths: list[str],
    out: TextIO,
    cancelled: Optional[Callable[[], bool]] = None,
    embedder: Optional[Embedder] = None,
    embedder_name: str = "",
) -> IndexSummary:
    """Refresh `index` for `paths`, the progress bar and each note on `out`; passages get vectors from `embedder`
    when one is given, and without one a note says what it would add. Ctrl-C (in the main thread) cancels between
    files; the summary says so."""
    line = ProgressLine(out)
    stop = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        previous = signal.signal(signal.SIGINT, lambda signum, frame: stop.set())
    try:
        summary = refresh(
            index,
            paths,
            embedder=embedder,
            embedder_name=embedder_name,
            progress=lambda progress: line.show(describe(progress), last=progress.done == progress.total),
            cancelled=lambda: stop.is_set() or bool(cancelled and cancelled()),
        )
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
        line.finish()
    for note in summary.notes:
        print(f"note: {printable(note.sentence)}", file=out)
    if embedder is None and not summary.cancelled:
        print(f"note: {NO_EMBEDDER_SENTENCE}", file=out)
    return summary


def run(args: argparse.Namespace) -> int:
    path = Path(args.db) if args.db else default_index_path()
    try:
        index = DocumentIndex(path)
    except IndexFileError as exc:
        say_error(exc)
        return 2
    try:
        with index, opened_embedder(args) as (embedder, embedder_name):
            return _index(index, args.paths, embedder, embedder_name)
    except UsageError as exc:
        say_error(exc)
        return 2


def _index(index: DocumentIndex, paths: list[str], embedder: Optional[Embedder], embedder_name: str) -> int:
    summary = index_with_progress(index, paths, sys.stderr, embedder=embedder, embedder_name=embedder_name)
    if summary.cancelled:
        print(f"interrupted: what was indexed is kept in {index.path}; the same command goes on.", file=sys.stderr)
        return 130
    files = summary.added + summary.changed + summary.unchanged
    if not files and not summary.removed:
        say_error(f"no document to index in {', '.join(paths)} (text, Markdown, code, HTML, PDF, DOCX)")
        return 2
    print(summary_text(summary, index))
    return 0
