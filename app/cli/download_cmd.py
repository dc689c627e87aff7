"""`specchat-cli download REPO [FILE_PATTERN] [--dest DIR]`: fetch GGUF files from the Hugging Face Hub.

FILE_PATTERN picks models in the repository: a quantization ("Q4_K_M"), part of a file name, or a glob
("*q8_0*.gguf"); all parts of a split model come along, and from a repository that holds picture projectors
(mmproj-*.gguf) one projector too (the F16 one, else the smallest), saved under a name that pairs it with the
model so that it can see. Without FILE_PATTERN, a repository with a single model downloads that model, and one
with several lists them. Files land in the app's models folder (or --dest), where the app finds them. Progress
goes to stderr, the final paths to stdout. Ctrl-C stops and keeps what was downloaded: the same command resumes
it.

Exit status: 0 done, 1 failed (the message says why), 2 nothing chosen, 130 interrupted.
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import threading
from pathlib import Path
from typing import Optional, TextIO

from app.common.progress_line import ProgressLine, bar
from app.hub.client import HubClient, RepoListing
from app.hub.download import DownloadJob, DownloadProgress
from app.hub.download_plan import format_bytes
from app.hub.errors import DownloadCancelled, HubError
from app.hub.repo_files import RemoteModel
from app.hub.repo_projector import download_items

EXIT_FAILED = 1
EXIT_NOTHING_CHOSEN = 2
EXIT_INTERRUPTED = 130


def register(subparsers) -> None:
    parser = subparsers.add_parser(
        "download",
        help="download GGUF models from the Hugging Face Hub",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("repo", metavar="REPO", help="Hub repository, e.g. Qwen/Qwen2.5-Coder-1.5B-Instruct-GGUF")
    parser.add_argument(
        "pattern",
        metavar="FILE_PATTERN",
        nargs="?",
        help="quantization, part of a file name, or glob (default: the repo's only model)",
    )
    parser.add_argument(
        "--dest", metavar="DIR", type=Path, help="folder to save into (default: the app's models folder)"
    )
    parser.add_argument("--revision", metavar="REV", help="branch, tag or commit (default: main)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    client = HubClient()
    try:
        listing = client.list_gguf(args.repo, args.revision)
    except HubError as exc:
        return _fail(exc)

    models = choose_models(listing, args.pattern)
    if not models:
        if args.pattern and match_models(listing, args.pattern):
            print(
                f"{args.pattern!r} matches several models in {args.repo}; be more precise, or use a glob "
                "such as '*Q4*' to download all it matches. It offers:",
                file=sys.stderr,
            )
        elif args.pattern:
            print(f"Nothing in {args.repo} matches {args.pattern!r}. It offers:", file=sys.stderr)
        else:
            print(
                f"{args.repo} offers several models; name one with FILE_PATTERN, e.g. "
                f"specchat-cli download {args.repo} Q4_K_M",
                file=sys.stderr,
            )
        print_listing(listing, sys.stderr)
        return EXIT_NOTHING_CHOSEN

    # A model chosen twice's projector, kept under its published name for both, is fetched once.
    items = list(dict.fromkeys(item for model in models for item in download_items(listing, model, args.revision)))
    progress = TerminalProgress(sys.stderr)
    job = DownloadJob(items, args.dest, client=client, on_progress=progress)
    try:
        plan = job.make_plan()
    except HubError as exc:
        return _fail(exc)
    print(
        f"Downloading {len(items)} file(s), {format_bytes(plan.total_bytes)}, to {plan.dest_dir}"
        + (f" (resuming, {format_bytes(plan.done_bytes)} already here)" if plan.done_bytes else ""),
        file=sys.stderr,
    )

    outcome: dict[str, object] = {}
    finished = threading.Event()

    def work() -> None:
        try:
            outcome["paths"] = job.run()
        except BaseException as exc:  # handed to the main thread, which reports it
            outcome["error"] = exc
        finally:
            finished.set()

    # The job runs in a thread so Ctrl-C lands in the main thread, which cancels it cleanly (partial kept).
    # We wait on an Event, not Thread.join: on Python 3.11 a KeyboardInterrupt during join(timeout) leaves the
    # thread marked finished while it still runs, and we would return while it is writing.
    threading.Thread(target=work, name="specchat-download", daemon=True).start()
    try:
        while not finished.wait(0.1):
            pass
    except KeyboardInterrupt:
        job.cancel()
        finished.wait()
        progress.finish()
        print("Interrupted. What was downloaded is kept; run the same command again to resume.", file=sys.stderr)
        return EXIT_INTERRUPTED
    progress.finish()

    error = outcome.get("error")
    if isinstance(error, DownloadCancelled):
        print(str(error), file=sys.stderr)
        return EXIT_INTERRUPTED
    if isinstance(error, HubError):
        return _fail(error)
    if isinstance(error, BaseException):
        raise error
    for model in models:
        print(Path(plan.dest_dir) / model.first_file.name)
    return 0


def choose_models(listing: RepoListing, pattern: Optional[str]) -> list[RemoteModel]:
    """The models to download; [] when none matches or when a plain (non-glob) pattern names several.

    A whole split model comes along when any of its parts matches. A glob ("*Q4*") may pick several models on
    purpose; a plain word that matches several is taken as a typo-sized ambiguity, not a wish for gigabytes.
    """
    models = [m for group in listing.groups for m in group.models]
    if not pattern:
        chat_models = [m for m in models if not m.is_projector]
        return chat_models if len(chat_models) == 1 else []
    matched = match_models(listing, pattern)
    if any(ch in pattern for ch in "*?[") or len(matched) == 1:
        return matched
    return []


def match_models(listing: RepoListing, pattern: str) -> list[RemoteModel]:
    """Models whose quantization is `pattern`, else whose name or file paths match it (glob or substring)."""
    models = [m for group in listing.groups for m in group.models]
    wanted = pattern.lower()
    exact_quant = [m for m in models if m.quant.lower() == wanted and not m.is_projector]
    if exact_quant:
        return exact_quant  # "Q4_K" means Q4_K, not also Q4_K_M and Q4_K_S
    is_glob = any(ch in pattern for ch in "*?[")

    def matches(text: str) -> bool:
        text = text.lower()
        return fnmatch.fnmatchcase(text, wanted) if is_glob else wanted in text

    return [m for m in models if matches(m.name) or any(matches(f.path) or matches(f.name) for f in m.files)]


def print_listing(listing: RepoListing, out: TextIO) -> None:
    for group in listing.groups:
        for model in group.models:
            size = format_bytes(model.size) if model.size is not None else "?"
            parts = f"  ({len(model.files)} parts)" if model.is_split else ""
            print(f"  {group.quant or '-':<12} {size:>9}  {model.name}{parts}", file=out)


class TerminalProgress:
    """Download progress on a terminal: one line redrawn in place on a TTY, a line every few seconds otherwise."""

    def __init__(self, out: TextIO, is_tty: Optional[bool] = None, log_every_s: float = 5.0):
        self.line = ProgressLine(out, is_tty, log_every_s)

    def __call__(self, progress: DownloadProgress) -> None:
        if progress.phase == "checking":
            return
        self.line.show(self.describe(progress), last=progress.phase in ("verifying", "done"))

    @staticmethod
    def describe(progress: DownloadProgress) -> str:
        if progress.phase == "done":
            return f"{bar(1.0)}  {format_bytes(progress.total_bytes)}  done"
        return "  ".join([bar(progress.fraction), *progress.facts()])

    def finish(self) -> None:
        self.line.finish()


def _fail(error: HubError) -> int:
    print(f"specchat-cli download: {error}", file=sys.stderr)
    return EXIT_FAILED
