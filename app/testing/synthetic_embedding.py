"""Tiny BERT-architecture GGUF embedding models (and a reranker), written on the spot so the embedding tests run offline.

The weights are random, so the vectors mean nothing; but llama.cpp loads the files as it loads all-MiniLM or
bge-reranker (the same architecture, keys and tensors, llama.cpp's `LLM_ARCH_BERT`), tokenizes with its WordPiece
tokenizer, pools (mean, or rank through the `cls` head) and returns vectors of EMBED_DIM floats. The vocabulary is a
few hundred English words plus single characters, so every text tokenizes, and texts that share words share tokens.

gguf is a runtime dependency of the app, so this module may be imported outside the tests.
"""

from __future__ import annotations

import string
from pathlib import Path
from typing import Iterator

import numpy as np

from app.testing.bert_gguf import POOLING_MEAN, POOLING_RANK, BertShape, WordPieceVocab, write_bert_gguf
from app.testing.vocab import CONTROL, NORMAL, UNKNOWN

EMBED_DIM = 32
EMBED_CONTEXT = 128  # small, so a test reaches the truncation with a short text

_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
_WORDS = (
    "the of and to in is it that was for on are as with his they at be this from have or by one had not but what all "
    "were when we there can an your which their said if do will each about how up out them then she many some so "
    "these would other into has more her two like him see time could no make than first been its who now people my "
    "made over did down only way find use may water long little very after words called just where most know get "
    "through back much before go good new write our used me man too any day same right look think also around "
    "another came come work three word must because does part even place well such here take why things help put "
    "years different away again off went old number great tell men say small every found still between name should "
    "home big give air line set own under read last never us left end along while might next sound below saw "
    "something thought both few those always looked show large often together asked house world going want school "
    "important until form food keep children feet land side without boy once animals life enough took sometimes "
    "four head above kind began almost live page got earth need far hand high year mother light parts country father "
    "let night following picture being study second eyes soon times story boys since white days ever paper hard "
    "near sentence better best across during today others however sure means knew try told young miles sun ways "
    "thing whole hear example heard several change answer room sea against top turned learn point city play toward "
    "five using himself usually cat dog fish bird car train river mountain tree flower bread cheese apple pizza"
).split()


def build_wordpiece_vocab() -> WordPieceVocab:
    pieces = string.ascii_lowercase + string.digits + string.punctuation
    tokens = list(_SPECIALS)
    tokens += ["\u2581" + c for c in pieces]  # a word's first character
    tokens += list(pieces)  # the characters after it
    tokens += ["\u2581" + w for w in dict.fromkeys(_WORDS)]
    types = [UNKNOWN if t == "[UNK]" else CONTROL if t in _SPECIALS else NORMAL for t in tokens]
    return WordPieceVocab(tokens, types, cls_id=2, sep_id=3, unk_id=1, pad_id=0, mask_id=4)


def write_tiny_embedding_model(
    path: Path, *, seed: int = 0, n_layer: int = 2, reranker: bool = False, name: str | None = None
) -> Path:
    """Write a tiny BERT embedding model (or, `reranker`, a cross-encoder with rank pooling) to `path`, atomically,
    and return the path."""
    shape = BertShape(
        context=EMBED_CONTEXT,
        dim=EMBED_DIM,
        n_layer=n_layer,
        n_head=4,
        ffn_dim=EMBED_DIM * 4,
        pooling=POOLING_RANK if reranker else POOLING_MEAN,
    )
    vocab = build_wordpiece_vocab()
    tensors = _bert_weights(len(vocab.tokens), n_layer, seed, reranker)
    return write_bert_gguf(path, name=name or Path(path).stem, shape=shape, vocab=vocab, tensors=tensors)


def _bert_weights(n_vocab: int, n_layer: int, seed: int, reranker: bool) -> Iterator[tuple[str, np.ndarray]]:
    """(name, float32 array) pairs in llama.cpp's BERT layout; numpy shapes are ggml's dimensions reversed."""
    d, ff = EMBED_DIM, EMBED_DIM * 4
    rng = np.random.default_rng([seed, 11])

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    def norm(prefix: str) -> Iterator[tuple[str, np.ndarray]]:
        yield f"{prefix}.weight", np.ones(d, dtype=np.float32)
        yield f"{prefix}.bias", np.zeros(d, dtype=np.float32)

    yield "token_embd.weight", normal(n_vocab, d)
    yield "token_types.weight", normal(2, d, scale=0.02)
    yield "position_embd.weight", normal(EMBED_CONTEXT, d, scale=0.02)
    yield from norm("token_embd_norm")
    for layer in range(n_layer):
        prefix = f"blk.{layer}"
        for part in ("attn_q", "attn_k", "attn_v", "attn_output"):
            yield f"{prefix}.{part}.weight", normal(d, d, scale=d**-0.5)
            yield f"{prefix}.{part}.bias", np.zeros(d, dtype=np.float32)
        yield from norm(f"{prefix}.attn_output_norm")
        # A small feed-forward keeps each layer close to the residual stream: texts sharing words stay close.
        yield f"{prefix}.ffn_up.weight", normal(ff, d, scale=0.1 * d**-0.5)
        yield f"{prefix}.ffn_up.bias", np.zeros(ff, dtype=np.float32)
        yield f"{prefix}.ffn_down.weight", normal(d, ff, scale=0.1 * ff**-0.5)
        yield f"{prefix}.ffn_down.bias", np.zeros(d, dtype=np.float32)
        yield from norm(f"{prefix}.layer_output_norm")
    if reranker:
        yield "cls.weight", normal(d, d, scale=d**-0.5)
        yield "cls.bias", np.zeros(d, dtype=np.float32)
        yield "cls.output.weight", normal(1, d, scale=d**-0.5)
        yield "cls.output.bias", np.zeros(1, dtype=np.float32)
