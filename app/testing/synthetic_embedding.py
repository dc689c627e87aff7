"""Tiny BERT-architecture GGUF embedding models (and a reranker), written on the spot so the embedding tests run offline.

The weights are random, so the vectors mean nothing; but llama.cpp loads the files as it loads all-MiniLM or
bge-reranker (the same architecture, keys and tensors, llama.cpp's `LLM_ARCH_BERT`), tokenizes with its WordPiece
tokenizer, pools (mean, or rank through the `cls` head) and returns vectors of EMBED_DIM floats. The vocabulary is a
few hundred English words plus single characters, so every text tokenizes, and texts that share words share tokens.

gguf is a runtime dependency of the app, so this module may be imported outside the tests.
"""

from __future__ import annotations

import string
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np

from app.common.atomic_write import atomic_file

EMBED_DIM = 32
EMBED_CONTEXT = 128  # small, so a test reaches the truncation with a short text
POOLING_MEAN = 1  # llama.cpp's LLAMA_POOLING_TYPE_MEAN
POOLING_RANK = 4  # LLAMA_POOLING_TYPE_RANK: a reranker's score through its `cls` head

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


@dataclass(frozen=True)
class WordPieceVocab:
    """A BERT vocabulary as llama.cpp's GGUF files store it: a word-start piece carries a leading U+2581, a
    continuation piece (Hugging Face's "##x") is stored bare."""

    tokens: list[str]
    token_types: list[int]  # 1 normal, 2 unknown, 3 control
    cls_id: int
    sep_id: int
    unk_id: int
    pad_id: int
    mask_id: int


def build_wordpiece_vocab() -> WordPieceVocab:
    pieces = string.ascii_lowercase + string.digits + string.punctuation
    tokens = list(_SPECIALS)
    tokens += ["\u2581" + c for c in pieces]  # a word's first character
    tokens += list(pieces)  # the characters after it
    tokens += ["\u2581" + w for w in dict.fromkeys(_WORDS)]
    types = [2 if t == "[UNK]" else 3 if t in _SPECIALS else 1 for t in tokens]
    return WordPieceVocab(tokens, types, cls_id=2, sep_id=3, unk_id=1, pad_id=0, mask_id=4)


def write_tiny_embedding_model(
    path: Path, *, seed: int = 0, n_layer: int = 2, reranker: bool = False, name: str | None = None
) -> Path:
    """Write a tiny BERT embedding model (or, `reranker`, a cross-encoder with rank pooling) to `path`, atomically,
    and return the path."""
    import gguf

    vocab = build_wordpiece_vocab()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, durable=False, mode=0o644) as tmp_name:
        writer = gguf.GGUFWriter(tmp_name, "bert")
        writer.add_name(name or path.stem)
        writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))
        writer.add_context_length(EMBED_CONTEXT)
        writer.add_embedding_length(EMBED_DIM)
        writer.add_block_count(n_layer)
        writer.add_feed_forward_length(EMBED_DIM * 4)
        writer.add_head_count(4)
        writer.add_layer_norm_eps(1e-12)
        writer.add_causal_attention(False)
        writer.add_pooling_type(gguf.PoolingType(POOLING_RANK if reranker else POOLING_MEAN))
        writer.add_token_type_count(2)
        writer.add_tokenizer_model("bert")
        writer.add_token_list(vocab.tokens)
        writer.add_token_types(vocab.token_types)
        writer.add_unk_token_id(vocab.unk_id)
        writer.add_bos_token_id(vocab.cls_id)
        writer.add_sep_token_id(vocab.sep_id)
        writer.add_pad_token_id(vocab.pad_id)
        writer.add_mask_token_id(vocab.mask_id)
        writer.add_add_bos_token(True)
        writer.add_add_sep_token(True)
        for tensor_name, tensor in _bert_weights(len(vocab.tokens), n_layer, seed, reranker):
            writer.add_tensor(tensor_name, tensor)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    return path


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
