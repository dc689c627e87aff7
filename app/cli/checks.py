"""Refusing, with one sentence each, the settings and texts the engine cannot run and the model files llama.cpp
would reject or crash on, before anything is loaded. Every function returns None when all is well, else the
message (the caller prints it and exits with status 2)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import Optional

from app.common.bounded_read import FileReadError, read_text_bounded
from app.engine.config import FLASH_ATTN_CHOICES, KV_TYPES, MAX_PARALLEL, PARALLEL_AUTO, load_settings_problem

MAX_THREADS = 512  # GGML_MAX_N_THREADS
# A prompt, tools or schema file: far more text than any model's context holds is not one.
MAX_TEXT_FILE_BYTES = 64 << 20


class UsageError(ValueError):
    """A command-line value the engine cannot run; the message is the whole sentence shown."""


# generate, bench and serve load models the same way (app.bench.args.local_load_settings): one help for --threads.
THREADS_HELP = (
    "CPU threads, fixed (default: Auto, the physical performance cores, fewer while another program keeps a core busy)"
)


def add_load_options(p: argparse.ArgumentParser) -> None:
    """How models load, as the window's Settings > Loading (generate and serve; app.bench.args.local_load_settings)."""
    p.add_argument(
        "--batch",
        type=int,
        default=0,
        help="prompt tokens read per forward pass (default: Auto, the engine's default for this machine)",
    )
    p.add_argument("--flash-attn", choices=FLASH_ATTN_CHOICES, default="auto", help="flash attention (default auto)")
    p.add_argument(
        "--kv-type",
        choices=KV_TYPES,
        default="f16",
        help="KV cache type: q8_0 takes about half of f16's memory, q4_0 a quarter; both need flash "
        "attention (default f16)",
    )
    p.add_argument("--no-mmap", action="store_true", help="read the weights into RAM instead of mapping the file")
    p.add_argument("--mlock", action="store_true", help="lock the weights in RAM")


def load_problem(args: argparse.Namespace) -> Optional[str]:
    """--batch, --flash-attn with --kv-type: what llama.cpp would refuse, in a sentence."""
    if getattr(args, "batch", 0) < 0:
        return "--batch must be 0 (Auto) or more"
    return load_settings_problem(getattr(args, "flash_attn", "auto"), getattr(args, "kv_type", "f16")) or None


def parallel_count(text: str) -> int:
    """--parallel's value: 1 to MAX_PARALLEL, or "auto" (PARALLEL_AUTO). Raises ArgumentTypeError with a sentence."""
    if text.strip().lower() == "auto":
        return PARALLEL_AUTO
    try:
        count = int(text)
    except ValueError:
        count = -1
    if not 1 <= count <= MAX_PARALLEL:
        raise argparse.ArgumentTypeError(f"must be a number from 1 to {MAX_PARALLEL}, or auto (not {text!r})")
    return count


def check_text(value: Optional[str], what: str) -> Optional[str]:
    """Text from the command line: it must be valid UTF-8 (Python keeps undecodable bytes as lone surrogates)."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return f"{what} is not valid UTF-8 text"
    return None


def read_text_file(path: str, what: str, limit: int = MAX_TEXT_FILE_BYTES) -> str:
    """A regular text file's content as UTF-8, at most `limit` bytes. Raises UsageError with the reason."""
    try:
        return read_text_bounded(path, limit)
    except FileReadError as exc:
        raise UsageError(f"{what} {exc}") from None


def _finite(value: float) -> bool:
    return not (math.isnan(value) or math.isinf(value))


def sampling_problem(args: argparse.Namespace) -> Optional[str]:
    """--max-tokens, --seed, --temperature, --top-k, --top-p, --min-p, --draft-p-min, --ctx, --threads."""
    if args.max_tokens < 1:
        return "--max-tokens must be at least 1"
    if getattr(args, "seed", None) is not None and args.seed < 0:
        return "--seed must be 0 or more"
    for flag, value, upper in (
        ("--temperature", getattr(args, "temperature", 0.0), None),
        ("--top-p", getattr(args, "top_p", 0.0), 1.0),
        ("--min-p", getattr(args, "min_p", 0.0), 1.0),
        ("--draft-p-min", getattr(args, "draft_p_min", 0.0), 1.0),
    ):
        if not _finite(value) or value < 0 or (upper is not None and value > upper):
            return (
                f"{flag} must be a number from 0 to {upper:g}"
                if upper is not None
                else f"{flag} must be a number of 0 or more"
            )
    if getattr(args, "top_k", 0) < 0:
        return "--top-k must be 0 (off) or more"
    if args.ctx < 1:
        return "--ctx must be at least 1"
    if args.threads is not None and not 1 <= args.threads <= MAX_THREADS:
        return f"--threads must be from 1 to {MAX_THREADS}"
    return None


def models_problems(paths: dict[str, str]) -> Optional[str]:
    """Whether llama.cpp can load each model ({role: path}), the first problem found: header checks, then the
    child-process probe, one child for them all (a first use's wait is mostly starting one)."""
    from app.engine.gguf.info import inspect_gguf
    from app.engine.gguf.probe import check_model_files

    for role, path in paths.items():
        problem = check_text(path, f"the {role} file name")
        if problem:
            return problem
    for role, problem in zip(paths, check_model_files(list(paths.values()))):
        if problem:
            return f"{role}: {problem}"
    for role, path in paths.items():
        kind = inspect_gguf(path).kind
        if kind != "chat":  # it would load, and write nothing a person could read
            what = "an embedding model" if kind == "embedding" else "a reranker"
            return f"{role}: {Path(path).name} is {what}, not a chat model: serve --embedding takes it"
    return None


def models_problem(args: argparse.Namespace) -> Optional[str]:
    """The target's and the draft's files, checked before loading so a bad one is refused, never crashes us."""
    paths = {role: path for role, path in (("target", args.target), ("draft", getattr(args, "draft", None))) if path}
    return models_problems(paths) if paths else None


def server_problem(args: argparse.Namespace) -> str | None:
    """--server needs --model and --chat, and takes no local models."""
    if not args.server:
        if args.model or args.api_key_file:
            return "--model and --api-key-file go with --server URL"
        if not args.target:
            return "give --target MODEL.gguf, or --server URL with --model NAME"
        return None
    if args.target or args.draft or args.ngram:
        return (
            "--server replaces --target, --draft and --ngram: the server runs the model, and speculates with "
            "the draft it was started with"
        )
    if not args.model:
        return "--server needs --model NAME (one of the names the server's /v1/models lists)"
    if args.chat is None:
        return "--server needs --chat MESSAGE (a server formats the chat itself; raw --prompt text is local only)"
    return None
