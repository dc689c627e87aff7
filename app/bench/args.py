"""Command-line arguments shared by `generate`, `bench` and the GUI benchmark: how a run picks its models."""

from __future__ import annotations

import argparse

from app.engine.config import MAX_DRAFT


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
