"""Synthetic models of real shapes, for measuring the GPU path without downloading anything (app.bench.gpu_check).

A 1.5B-class or 7B-class target has the layer count, widths and vocabulary size of Qwen2.5's models, with random
weights, so every forward pass costs what the real model's costs. Its draft agrees with it by construction: each
layer's output projections are zero, so the residual stream stays the token's embedding, and every model's output
head maps a token's embedding to the same next token (a fixed permutation of the vocabulary), whatever its width.
Greedy decoding then follows the permutation in target and draft alike, and every drafted token is accepted. The
other weights are random, and a GPU multiplies zeros as fast as anything else.

Tensors that repeat per layer share one random array (each layer's are the same): writing a 7B-class file then
costs the disk's time, not the random generator's.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from app.testing.synthetic import LlamaDims, write_llama_file
from app.testing.vocab import NORMAL, VocabSpec, build_vocab


@dataclass(frozen=True)
class ModelShape(LlamaDims):
    """A llama-architecture model's dimensions and its vocabulary's size (Qwen2.5's, here)."""

    n_vocab: int = 151936


SHAPES: dict[str, ModelShape] = {
    "0.5b": ModelShape(n_embd=896, n_layer=24, n_head=14, n_head_kv=2, n_ff=4864, n_vocab=151936),
    "1.5b": ModelShape(n_embd=1536, n_layer=28, n_head=12, n_head_kv=2, n_ff=8960, n_vocab=151936),
    "7b": ModelShape(n_embd=3584, n_layer=28, n_head=28, n_head_kv=4, n_ff=18944, n_vocab=152064),
    # The dry run's: the same construction at a size a CI runner writes and runs in a second.
    "tiny-draft": ModelShape(n_embd=64, n_layer=1, n_head=4, n_head_kv=2, n_ff=128, n_vocab=512, context_length=4096),
    "tiny-target": ModelShape(n_embd=128, n_layer=4, n_head=4, n_head_kv=2, n_ff=256, n_vocab=512, context_length=4096),
}


def _vocab(n_vocab: int):
    """The synthetic byte-level vocabulary padded with plain tokens no merge produces, to `n_vocab` entries."""
    vocab = build_vocab(VocabSpec())
    pad = n_vocab - len(vocab.tokens)
    if pad < 0:
        raise ValueError(f"a vocabulary of {n_vocab} tokens is smaller than the synthetic one ({len(vocab.tokens)})")
    return replace(
        vocab, tokens=vocab.tokens + [f"pad{i}" for i in range(pad)], token_types=vocab.token_types + [NORMAL] * pad
    )


def next_token_map(output_ids: list[int], seed: int = 0) -> dict[int, int]:
    """The permutation every model of a family follows: each producible token's greedy successor."""
    order = np.random.default_rng([seed, 9]).permutation(len(output_ids))
    return {output_ids[i]: output_ids[order[i]] for i in range(len(output_ids))}


def write_shaped_model(path: Path, shape: ModelShape, *, seed: int = 0, name: str = "") -> Path:
    """Write a model of `shape` with 16-bit weights to `path` (atomically) and return the path. Models written
    with the same seed agree on every greedy token, whatever their shapes."""
    vocab = _vocab(shape.n_vocab)
    successor = next_token_map(vocab.output_ids, seed)
    d, head_dim = shape.n_embd, shape.n_embd // shape.n_head
    d_kv = head_dim * shape.n_head_kv
    rng = np.random.default_rng([seed, shape.n_embd])

    def normal(rows: int, cols: int, scale: float) -> np.ndarray:
        return (rng.standard_normal((rows, cols), dtype=np.float32) * scale).astype(np.float16)

    # Unit-length random rows: in hundreds of dimensions any two are nearly orthogonal, so the row that equals a
    # token's own embedding wins its output by far (a dot product of 1 against about 0.1).
    embd = rng.standard_normal((shape.n_vocab, d), dtype=np.float32)
    embd /= np.linalg.norm(embd, axis=1, keepdims=True)
    output = np.zeros((shape.n_vocab, d), dtype=np.float16)
    for token, after in successor.items():
        output[after] = embd[token]
    layer = {
        "attn_q": normal(d, d, d**-0.5),
        "attn_k": normal(d_kv, d, d**-0.5),
        "attn_v": normal(d_kv, d, d**-0.5),
        "attn_output": np.zeros((d, d), dtype=np.float16),
        "ffn_gate": normal(shape.n_ff, d, d**-0.5),
        "ffn_up": normal(shape.n_ff, d, d**-0.5),
        "ffn_down": np.zeros((d, shape.n_ff), dtype=np.float16),
    }
    ones = np.ones(d, dtype=np.float32)

    def tensors():
        yield "token_embd.weight", embd.astype(np.float16)
        yield "output_norm.weight", ones
        yield "output.weight", output
        for i in range(shape.n_layer):
            yield f"blk.{i}.attn_norm.weight", ones
            yield f"blk.{i}.ffn_norm.weight", ones
            for tensor, weights in layer.items():
                yield f"blk.{i}.{tensor}.weight", weights

    return write_llama_file(path, vocab, shape, tensors(), f16=True, name=name)
