"""`specchat-cli`: inspect models, check pairs, generate, benchmark, download and export chats from the command line.

Each sub-command lives in its own module with a `register(subparsers)` function that adds its parser and sets
`func`, which receives the parsed arguments and returns the exit code; SUBCOMMANDS names them, and a run imports
only its own.

- bench_cmd.py: `specchat-cli bench`: plain vs speculative decoding side by side, as ratios measured in one run.
- check_pair_cmd.py: `specchat-cli check-pair TARGET DRAFT`: can this draft speculate for that target (llama.cpp's vocabulary rules)?
- checks.py: Refusing, with one sentence each, the settings and texts the engine cannot run and the model files llama.cpp
- desktop_cmd.py: `specchat-cli desktop install|uninstall`: add SpecChat to this user's application menu on Linux, or remove it.
- documents/: `specchat-cli index PATH...` and `generate --docs PATH`: documents indexed, and answered from with sources.
- download_cmd.py: `specchat-cli download REPO [FILE_PATTERN] [--dest DIR]`: fetch GGUF files from the Hugging Face Hub.
- export_cmd.py: `specchat-cli export CHAT_ID`: a chat from the chat database as Markdown, or as JSON with every token and round.
- file_guard.py: A model file that changes while the CLI reads it: one sentence and exit status 1, never a silent SIGBUS.
- generate_cmd.py: `specchat-cli generate`: one reply, plain or speculative, streamed to the terminal or printed as JSON.
- thinking_options.py: The thinking options (`--thinking`, `--thinking-budget`, ...) and the thinking printed dimmed, framed or hidden.
- image_options.py: `generate --image FILE` and `--mmproj FILE`: pictures in the --chat message, for a model that sees.
- tool_loop.py: `generate --mcp MCP.JSON`: the model calls MCP servers' tools, each call shown and allowed first, until it answers.
- tool_options.py: `generate --tools FILE.json` and `--json-schema FILE`: the files read and checked, and the reply's calls said.
- inspect_cmd.py: `specchat-cli inspect FILE…`: what each GGUF model is (name, architecture, size, quantization, vocabulary),
- terminal.py: What the CLI prints of text it did not write: no control characters, no credentials.
- serve_cmd.py: `specchat-cli serve`: the loaded models as a local OpenAI-compatible API, speculating as the window does.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Optional, Sequence

from app import __version__
from app.cli.terminal import make_output_safe, printable

# Each sub-command's name and the module that registers it, in the order --help lists them. A run imports only its
# own command's module (numpy, the bench and the document index cost about 0.3 s of every start otherwise); --help,
# no command or an unknown one imports them all, so the list and argparse's "choose from" name every command.
SUBCOMMANDS = {
    "inspect": "app.cli.inspect_cmd",
    "check-pair": "app.cli.check_pair_cmd",
    "generate": "app.cli.generate_cmd",
    "index": "app.cli.documents.index_cmd",
    "serve": "app.cli.serve_cmd",
    "bench": "app.cli.bench_cmd",
    "download": "app.cli.download_cmd",
    "desktop": "app.cli.desktop_cmd",
    "export": "app.cli.export_cmd",
}


def build_parser(argv: Optional[Sequence[str]] = None) -> argparse.ArgumentParser:
    """The parser; given `argv`, with only the sub-command it names (every one when it names none)."""
    parser = argparse.ArgumentParser(
        prog="specchat-cli",
        description="SpecChat from the command line: speculative decoding with local GGUF models.",
    )
    parser.add_argument("--version", action="version", version=f"specchat {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    named = _command_of(argv)
    for name, module in SUBCOMMANDS.items():
        if named is None or name == named:
            importlib.import_module(module).register(subparsers)
    return parser


def _command_of(argv: Optional[Sequence[str]]) -> Optional[str]:
    """The sub-command `argv` runs: its first word (the only option before it is --version), when that names one."""
    return argv[0] if argv and argv[0] in SUBCOMMANDS else None


def main(argv: Optional[Sequence[str]] = None) -> int:
    make_output_safe()
    parser = build_parser(sys.argv[1:] if argv is None else argv)
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
        print(f"specchat-cli: internal error: {type(exc).__name__}: {printable(str(exc))}", file=sys.stderr)
        return 1
