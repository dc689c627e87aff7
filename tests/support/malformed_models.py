"""Damaged GGUF files, each broken in one way that makes llama.cpp refuse it or abort, for tests of the refusals.

Each writer writes a valid tiny model (app.testing.synthetic) and breaks one thing: through the GGUF writer for metadata and
missing tensors, and by patching the written header in place for tensor types, names and offsets (what a damaged
download or a buggy converter produces). MALFORMED maps a kind to its writer and to words the refusal contains.

Kinds and what llama.cpp 0.3.36's build does with them when loaded unchecked:
  duplicate_token_text  two tokens with the same text: GGML_ASSERT in llama-vocab.cpp's load (abort)
  add_bos_without_bos   add_bos_token set, no BOS token: GGML_ASSERT in the tokenizer (abort)
  unknown_tensor_type   a tensor of a removed ggml type (Q4_2): refused by gguf.cpp
  unknown_architecture  general.architecture "nosucharch": refused by the model loader
  missing_tensor        no token_embd.weight: refused by the model loader
  duplicate_tensor      two tensors named blk.0.attn_q.weight: refused by gguf.cpp
  misaligned_offset     a tensor's data offset moved by one byte: refused by gguf.cpp
  no_tensors            metadata and vocabulary but no weights: refused by the model loader
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from app.testing.synthetic import DRAFT_LAYERS, LAYER_SCALE, write_tiny_model

_GGML_TYPE_Q4_2 = 4  # removed from ggml; old files still carry it


def _tiny(path: Path, edit=None) -> Path:
    return write_tiny_model(
        path, seed=0, n_layer=DRAFT_LAYERS, layer_scale=LAYER_SCALE, name=Path(path).stem, edit=edit
    )


def _set_value(writer, key: str, value, vtype) -> None:
    from gguf import GGUFValue

    writer.kv_data[0][key] = GGUFValue(value=value, type=vtype)


def _patch_tensor_info(path: Path, name: str, patch: Callable[[list], None]) -> Path:
    """Change one tensor's header entry in place (its parts: name length, name, n_dims, dims, type, offset)."""
    from gguf import GGUFReader

    reader = GGUFReader(path, "r+")
    [tensor] = [t for t in reader.tensors if t.name == name]
    patch(tensor.field.parts)
    reader.data.flush()
    del reader
    return path


def write_duplicate_token_text(path: Path) -> Path:
    def edit(writer) -> None:
        tokens = writer.kv_data[0]["tokenizer.ggml.tokens"].value
        tokens[tokens.index("<|reserved_3|>")] = "<|reserved_2|>"

    return _tiny(path, edit)


def write_add_bos_without_bos(path: Path) -> Path:
    from gguf import GGUFValueType

    def edit(writer) -> None:
        # chatglm-bpe is a pre-tokenizer for which llama.cpp has no default BOS id.
        del writer.kv_data[0]["tokenizer.ggml.bos_token_id"]
        _set_value(writer, "tokenizer.ggml.pre", "chatglm-bpe", GGUFValueType.STRING)
        _set_value(writer, "tokenizer.ggml.add_bos_token", True, GGUFValueType.BOOL)

    return _tiny(path, edit)


def write_unknown_tensor_type(path: Path) -> Path:
    def patch(parts) -> None:
        parts[4][0] = _GGML_TYPE_Q4_2

    return _patch_tensor_info(_tiny(path), "blk.0.ffn_down.weight", patch)


def write_unknown_architecture(path: Path) -> Path:
    from gguf import GGUFValueType

    def edit(writer) -> None:
        _set_value(writer, "general.architecture", "nosucharch", GGUFValueType.STRING)

    return _tiny(path, edit)


def write_missing_tensor(path: Path) -> Path:
    def edit(writer) -> None:
        del writer.tensors[0]["token_embd.weight"]

    return _tiny(path, edit)


def write_duplicate_tensor(path: Path) -> Path:
    def patch(parts) -> None:
        parts[1][:] = list(b"blk.0.attn_q.weight")

    return _patch_tensor_info(_tiny(path), "blk.0.attn_k.weight", patch)


def write_misaligned_offset(path: Path) -> Path:
    def patch(parts) -> None:
        parts[5][0] += 1

    return _patch_tensor_info(_tiny(path), "blk.0.attn_norm.weight", patch)


def write_no_tensors(path: Path) -> Path:
    def edit(writer) -> None:
        writer.tensors[0].clear()

    return _tiny(path, edit)


@dataclass(frozen=True)
class Malformed:
    write: Callable[[Path], Path]
    reason: str  # words the refusal of this file contains


MALFORMED: dict[str, Malformed] = {
    "duplicate_token_text": Malformed(write_duplicate_token_text, "have the same text"),
    "add_bos_without_bos": Malformed(write_add_bos_without_bos, "has no BOS token"),
    "unknown_tensor_type": Malformed(write_unknown_tensor_type, "tensor type 4"),
    "unknown_architecture": Malformed(write_unknown_architecture, "architecture 'nosucharch'"),
    "missing_tensor": Malformed(write_missing_tensor, "missing tensor token_embd.weight"),
    "duplicate_tensor": Malformed(write_duplicate_tensor, "'blk.0.attn_q.weight' appears twice"),
    "misaligned_offset": Malformed(write_misaligned_offset, "data is misplaced"),
    "no_tensors": Malformed(write_no_tensors, "holds no tensors"),
}


def make_malformed_set(dest: Path) -> dict[str, Path]:
    """Write one file of every MALFORMED kind under `dest` ("<kind>.gguf") and return kind -> path."""
    dest = Path(dest)
    return {kind: m.write(dest / f"{kind}.gguf") for kind, m in MALFORMED.items()}
