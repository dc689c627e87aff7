"""`specchat-cli export CHAT_ID`: a chat from the chat database as Markdown, or as JSON with every token and round."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from app.cli.checks import UsageError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "export",
        help="write a chat as Markdown or as JSON (every token's origin and round, every round's proposal)",
        description="Write one chat of SpecChat's chat database to a file or to standard output. `--list` shows "
        "the chats and their ids.",
    )
    p.add_argument("chat_id", metavar="CHAT_ID", type=int, nargs="?", help="the chat's id (see --list)")
    p.add_argument("--list", action="store_true", help="list the chats (id, last change, title) and exit")
    p.add_argument(
        "--format",
        choices=("markdown", "json"),
        default=None,
        help="markdown (default) or json; with --output, the file's suffix (.md, .json) decides",
    )
    p.add_argument("--output", "-o", metavar="FILE", help="write here (whole or not at all) instead of stdout")
    p.add_argument("--db", metavar="PATH", help="the chat database (default: SpecChat's own)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from app.replies import export
    from app.platform import paths
    from app.store import ChatStore, NotFoundError, StoreError

    path = Path(args.db) if args.db else paths.database_path()
    try:
        if args.chat_id is None and not args.list:
            raise UsageError("give a CHAT_ID (`specchat-cli export --list` shows them)")
        if not path.is_file():
            raise UsageError(f"there is no chat database at {path}")
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        with ChatStore(path, check_pages=False) as store:
            if args.list:
                for chat in store.list_chats():
                    print(f"{chat.id}\t{export.format_date(chat.updated_at)}\t{' '.join(chat.title.split())}")
                return 0
            if args.output:
                fmt = export.write_export(store, args.chat_id, args.output, args.format)
                print(f"wrote chat {args.chat_id} as {fmt} to {args.output}", file=sys.stderr)
            else:
                sys.stdout.write(export.export_text(store, args.chat_id, args.format or "markdown"))
    except NotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except StoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"error: cannot write {args.output}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0
