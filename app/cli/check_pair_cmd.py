"""`specchat-cli check-pair TARGET DRAFT`: can this draft speculate for that target (llama.cpp's vocabulary rules)?

Exit code 0 when compatible, 1 when not, 2 when a file is unreadable or llama.cpp cannot load it.
"""

from __future__ import annotations

import argparse
import json
import sys

from app.engine.gguf.compat import compatibility
from app.engine.errors import ModelFileError


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "check-pair",
        help="check whether a draft model can speculate for a target model",
        description="Apply llama.cpp's draft compatibility rules to two GGUF files, reading only their metadata. "
        "Exit code 0: compatible; 1: not compatible; 2: a file is unreadable or llama.cpp cannot load it.",
    )
    p.add_argument("target", metavar="TARGET", help="target GGUF model")
    p.add_argument("draft", metavar="DRAFT", help="draft GGUF model")
    p.add_argument("--json", action="store_true", help="print {compatible, reason, rule} as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    try:
        result = compatibility(args.target, args.draft)
    except ModelFileError as exc:
        print(f"specchat-cli check-pair: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"compatible": result.compatible, "reason": result.reason, "rule": result.rule}))
    elif result.rule == "unusable":
        print(f"specchat-cli check-pair: {result.reason}", file=sys.stderr)
    else:
        print("compatible" if result.compatible else f"not compatible: {result.reason}")
    if result.rule == "unusable":
        return 2
    return 0 if result.compatible else 1
