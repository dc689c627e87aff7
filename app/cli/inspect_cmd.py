"""`specchat-cli inspect FILE…`: what each GGUF model is (name, architecture, size, quantization, vocabulary),
read from its metadata without loading the weights."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys

from app.engine.errors import ModelFileError
from app.engine.gguf.kind import not_chat_sentence
from app.engine.gguf.info import ModelInfo, inspect_gguf
from app.common.units import format_bytes, format_parameter_count

COLUMNS = ("file", "name", "arch", "params", "quant", "ctx", "vocab", "size")


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "inspect",
        help="show what GGUF model files are, without loading them",
        description="Read each file's GGUF metadata and print a table (or JSON). "
        "Exit code 2 when any file is unreadable; the others are still shown.",
    )
    p.add_argument("files", nargs="+", metavar="FILE", help="GGUF model files")
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per readable file")
    p.add_argument(
        "--probe",
        action="store_true",
        help="also let llama.cpp read each usable file's vocabulary in a separate process (slower; "
        "catches what the metadata cannot show)",
    )
    p.set_defaults(func=run)


def info_as_dict(info: ModelInfo) -> dict[str, object]:
    """The fields a script wants, JSON-ready (no raw metadata)."""
    return {
        "path": str(info.path),
        "file_size": info.file_size,
        "name": info.name,
        "architecture": info.architecture,
        "parameter_count": info.parameter_count,
        "parameters": format_parameter_count(info.parameter_count),
        "file_type": info.file_type,
        "quantization": info.quantization,
        "file_type_guessed": info.file_type_guessed,
        "context_length": info.context_length,
        "tokenizer_model": info.tokenizer_model,
        "tokenizer_pre": info.tokenizer_pre,
        "vocab_type": info.vocab_type,
        "vocab_size": info.vocab_size,
        "bos_id": info.bos_id,
        "eos_id": info.eos_id,
        "eot_id": info.eot_id,
        "add_bos": info.add_bos,
        "add_eos": info.add_eos,
        "has_chat_template": info.chat_template is not None,
        "kind": info.kind,  # "chat", "embedding" or "reranker" (app.engine.gguf.kind)
        "split_count": info.split_count,
        "split_index": info.split_index,
        "usable": info.usable,
        "problem": info.problem,
    }


def _row(info: ModelInfo) -> tuple[str, ...]:
    quant = info.quantization + (" (guessed)" if info.file_type_guessed else "")
    return (
        info.path.name,
        info.name,
        info.architecture,
        format_parameter_count(info.parameter_count),
        quant,
        str(info.context_length) if info.context_length else "?",
        f"{info.vocab_type} {info.vocab_size}",
        format_bytes(info.file_size),
    )


def _print_table(infos: list[ModelInfo]) -> None:
    rows = [tuple(c.upper() for c in COLUMNS)] + [_row(info) for info in infos]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip())
    for info in infos:
        if not info.usable:
            print(f"note: {info.path.name} cannot be loaded: {info.problem}")
        elif info.kind != "chat":
            print(f"note: {info.path.name}: {not_chat_sentence(info.kind)}")


def run(args: argparse.Namespace) -> int:
    infos: list[ModelInfo] = []
    failed = False
    for name in args.files:
        try:
            info = inspect_gguf(name)
            if args.probe and info.usable:
                from app.engine.gguf.probe import probe_model

                verdict = probe_model(name)
                if not verdict.ok:
                    info = dataclasses.replace(info, usable=False, problem=verdict.reason)
            infos.append(info)
        except ModelFileError as exc:
            print(f"specchat-cli inspect: {exc}", file=sys.stderr)
            failed = True
    if args.json:
        print(json.dumps([info_as_dict(info) for info in infos], indent=2))
    elif infos:
        _print_table(infos)
    return 2 if failed else 0
