"""Writing a BERT-architecture GGUF embedding model the way llama.cpp reads one (`LLM_ARCH_BERT`): its keys, its
WordPiece tokenizer's fields, and tensors already named in llama.cpp's layout. The tiny synthetic models
(synthetic_embedding.py) and the real all-MiniLM conversion (tests/support/real_embedding.py) both write through
`write_bert_gguf`, so the two cannot drift apart.

gguf is a runtime dependency of the app, so this module may be imported outside the tests.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

import numpy as np

from app.common.atomic_write import atomic_file

POOLING_MEAN = 1  # llama.cpp's LLAMA_POOLING_TYPE_MEAN
POOLING_RANK = 4  # LLAMA_POOLING_TYPE_RANK: a reranker's score through its `cls` head


@dataclass(frozen=True)
class WordPieceVocab:
    """A BERT vocabulary as llama.cpp's GGUF files store it: a word-start piece carries a leading U+2581, a
    continuation piece (Hugging Face's "##x") is stored bare."""

    tokens: list[str]
    token_types: list[int]  # NORMAL, UNKNOWN or CONTROL (app.testing.vocab)
    cls_id: int
    sep_id: int
    unk_id: int
    pad_id: int
    mask_id: int


@dataclass(frozen=True)
class BertShape:
    """The hyperparameters llama.cpp reads from a BERT model's keys."""

    context: int
    dim: int
    n_layer: int
    n_head: int
    ffn_dim: int
    layer_norm_eps: float = 1e-12
    pooling: int = POOLING_MEAN
    token_type_count: int = 2


def write_bert_gguf(
    path: Path,
    *,
    name: str,
    shape: BertShape,
    vocab: WordPieceVocab,
    tensors: Iterable[tuple[str, np.ndarray]],
    f16: bool = False,
) -> Path:
    """Write a BERT model to `path`, atomically, and return the path. `tensors` are (llama.cpp name, array) pairs,
    float32 or float16 as they are to be stored, numpy shapes being ggml's dimensions reversed; `f16` says in the
    file's type that its matrices are float16."""
    import gguf

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_file(path, durable=False, mode=0o644) as tmp_name:
        writer = gguf.GGUFWriter(tmp_name, "bert")
        writer.add_name(name)
        writer.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32))
        writer.add_context_length(shape.context)
        writer.add_embedding_length(shape.dim)
        writer.add_block_count(shape.n_layer)
        writer.add_feed_forward_length(shape.ffn_dim)
        writer.add_head_count(shape.n_head)
        writer.add_layer_norm_eps(shape.layer_norm_eps)
        writer.add_causal_attention(False)
        writer.add_pooling_type(gguf.PoolingType(shape.pooling))
        writer.add_token_type_count(shape.token_type_count)
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
        for tensor_name, tensor in tensors:
            writer.add_tensor(tensor_name, tensor)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    return path
