"""What a model takes in memory once loaded: its weights and its KV cache at a context size and KV-cache type.

The one formula the library, the settings and GPU-layer fitting (app.engine.placement.gpu_fit) share. Read from
the GGUF header alone. The KV cache holds, for every layer and every token of the context, a key and a value per
KV head (grouped-query attention shares a KV head between several query heads):
    n_ctx x sum over layers of (key_length + value_length) x head_count_kv x bytes per element,
with llama.cpp's block sizes for the quantized types (q8_0 keeps 32 values in 34 bytes, q4_0 in 18). llama.cpp
reports exactly this for Qwen2.5-Coder 1.5B (docs/performance.md, Memory). Not counted: the compute buffer (tens of
MB for a 512-token batch) and, on a CPU that repacks weights for its matrix units, the repacked copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from app.common.units import format_bytes
from app.engine.config import KvType

# Bytes per block and values per block of each KV-cache type (ggml's type traits).
_KV_BLOCK: dict[str, tuple[int, int]] = {"f16": (2, 1), "q8_0": (34, 32), "q4_0": (18, 32)}


def metadata_count(value: object) -> Optional[int]:
    """A GGUF metadata value read as a count: a non-negative int; None for anything else (a bool, a list, text)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _per_layer(value: object, n_layer: int, default: int) -> list[int]:
    """A hyperparameter that may be one number or one per layer (a short array the header reader decoded)."""
    if isinstance(value, list) and len(value) == n_layer and all(metadata_count(v) is not None for v in value):
        return list(value)
    single = metadata_count(value)
    return [default if single is None else single] * n_layer


def kv_values_per_token(metadata: dict, n_layer: Optional[int] = None) -> tuple[int, ...]:
    """Each layer's key and value elements per token of context (K and V together), from the header's metadata.
    `n_layer` when the caller counted the layers some other way (the tensors); else the header's block count."""
    arch = metadata.get("general.architecture", "")
    if n_layer is None:
        n_layer = metadata_count(metadata.get(f"{arch}.block_count")) or 0
    n_embd = metadata_count(metadata.get(f"{arch}.embedding_length")) or 0
    heads = _per_layer(metadata.get(f"{arch}.attention.head_count"), n_layer, 1)
    kv_heads = _per_layer(metadata.get(f"{arch}.attention.head_count_kv"), n_layer, -1)
    values = []
    for i in range(n_layer):
        n_head = max(heads[i], 1)
        n_head_kv = heads[i] if kv_heads[i] < 0 else kv_heads[i]
        k_len = metadata_count(metadata.get(f"{arch}.attention.key_length")) or n_embd // n_head
        v_len = metadata_count(metadata.get(f"{arch}.attention.value_length")) or n_embd // n_head
        values.append((k_len + v_len) * n_head_kv)
    return tuple(values)


def kv_bytes(values_per_token: int, n_ctx: int, kv_type: KvType = "f16") -> int:
    """The KV cache of `values_per_token` (one layer's, or all layers' summed) at `n_ctx` tokens."""
    block_bytes, block_values = _KV_BLOCK[kv_type]
    return n_ctx * values_per_token * block_bytes // block_values


@dataclass(frozen=True)
class MemoryCost:
    """What one model takes once loaded, in bytes."""

    weights: int
    kv_cache: int
    n_ctx: int  # the context the cache was sized for (capped at what the model was trained for)
    kv_type: KvType

    @property
    def total(self) -> int:
        return self.weights + self.kv_cache

    @property
    def label(self) -> str:
        """ "1.3 GB": what the library's Memory column shows."""
        return format_bytes(self.total)

    @property
    def detail(self) -> str:
        """ "1.1 GB of weights + 117 MB of KV cache (4,096 tokens, f16)"."""
        return (
            f"{format_bytes(self.weights)} of weights + {format_bytes(self.kv_cache)} of KV cache "
            f"({self.n_ctx:,} tokens, {self.kv_type})"
        )


def capped_context(n_ctx: int, trained_context: Optional[int]) -> int:
    """The context one sequence gets for `n_ctx` asked: at most what the model was trained on (0 or None: unknown),
    as llama.cpp caps it. Requests side by side each get this much; the cap is per sequence, never their sum."""
    return min(n_ctx, trained_context) if trained_context else n_ctx


def memory_cost(
    weights: int, kv_values: int, n_ctx: int, kv_type: KvType = "f16", trained_context: Optional[int] = None
) -> MemoryCost:
    """A model's memory at `n_ctx` (llama.cpp caps it at the trained context) from its weights' bytes (the
    file's size: the header is a few MB at most) and its KV values per token (`kv_values_per_token`, summed)."""
    n_ctx = capped_context(n_ctx, trained_context)
    return MemoryCost(weights, kv_bytes(kv_values, n_ctx, kv_type), n_ctx, kv_type)
