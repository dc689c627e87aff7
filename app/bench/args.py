"""Command-line arguments shared by `generate`, `bench`, `serve` and the GUI benchmark: how a run picks its models,
and the typed targets and load settings they become."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Optional

from app.engine.config import MAX_DRAFT, THREADS_AUTO, LoadSettings
from app.engine.placement.rpc import parse_endpoints
from app.engine.targets import LocalModel


def add_model_arguments(parser: argparse.ArgumentParser, target_required: bool = True) -> None:
    """--target, --draft or --ngram, and --draft-max: how a command picks its models and drafter."""
    parser.add_argument("--target", required=target_required, help="target GGUF model")
    drafter = parser.add_mutually_exclusive_group()
    drafter.add_argument(
        "--draft",
        help="draft GGUF model sharing the target's vocabulary (with --draft-max auto, "
        "each round chooses between it and copying from the text so far, as the window does)",
    )
    drafter.add_argument("--ngram", action="store_true", help="draft by n-gram prompt lookup (no second model)")
    parser.add_argument(
        "--draft-max",
        default="auto",
        help=f"draft length per round: a number from 0 to {MAX_DRAFT}, or 'auto' to let the "
        "controller choose (default)",
    )


def parse_draft_max(value: str) -> int | None:
    """--draft-max: "auto" (None, the controller chooses) or a fixed draft length from 0 to MAX_DRAFT."""
    if value == "auto":
        return None
    if not (value.isascii() and value.isdigit()) or int(value) > MAX_DRAFT:
        raise ValueError(f"--draft-max must be a number from 0 to {MAX_DRAFT}, or 'auto'")
    return int(value)


def local_load_settings(args: argparse.Namespace, rpc: str = "") -> LoadSettings:
    """--ctx and --threads (both `generate` and `bench` have them), the load options where the command has them
    (app.cli.checks.add_load_options), with `rpc` workers for the target."""
    return LoadSettings(
        n_ctx=args.ctx,
        n_threads=args.threads or THREADS_AUTO,
        rpc_servers=parse_endpoints(rpc) if rpc else (),
        n_batch=getattr(args, "batch", 0),
        flash_attn=getattr(args, "flash_attn", "auto"),
        kv_type=getattr(args, "kv_type", "f16"),
        mmap=not getattr(args, "no_mmap", False),
        mlock=getattr(args, "mlock", False),
        n_parallel=getattr(args, "parallel", 1),
    )


def local_model(args: argparse.Namespace) -> tuple[LocalModel, Optional[Path]]:
    """--target and --draft as typed targets (checked by models_problem first)."""
    return LocalModel(Path(args.target)), Path(args.draft) if args.draft else None
