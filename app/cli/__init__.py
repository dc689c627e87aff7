"""`specchat-cli`: inspect models, check pairs, generate, benchmark, download and export chats from the command line.

Each sub-command lives in its own module with a `register(subparsers)` function that adds its parser and sets
`func`, which receives the parsed arguments and returns the exit code.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Optional, Sequence

from app import __version__
from app.cli import bench_cmd, check_pair_cmd, desktop_cmd, download_cmd, export_cmd, generate_cmd, inspect_cmd

SUBCOMMANDS = (inspect_cmd, check_pair_cmd, generate_cmd, bench_cmd, download_cmd, desktop_cmd, export_cmd)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="specchat-cli",
        description="SpecChat from the command line: speculative decoding with local GGUF models.",
    )
    parser.add_argument("--version", action="version", version=f"specchat {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "func", None):
        parser.print_help(sys.stderr)
        return 2
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1  # the reader went away (`| head`): nothing left to say
    except Exception as exc:  # a bug of ours: one line, not a traceback (SPECCHAT_DEBUG=1 shows it)
        if os.environ.get("SPECCHAT_DEBUG"):
            raise
        print(f"specchat-cli: internal error: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
