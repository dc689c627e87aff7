"""What a GGUF model is for, read from its header: chatting, embedding text, or ranking documents for a query.

llama.cpp's converters mark the difference in the metadata: an encoder architecture (BERT and its kin) or a
`<arch>.pooling_type` key (how per-token outputs become one vector: mean, CLS, last; "rank" for a cross-encoder's
relevance score) on a model without a chat template. A chat model never carries a pooling type.
"""

from __future__ import annotations

from typing import Literal, Mapping, Optional

ModelKind = Literal["chat", "embedding", "reranker"]

# llama.cpp's LLAMA_POOLING_TYPE_* values as the files store them.
POOLING_NONE, POOLING_MEAN, POOLING_CLS, POOLING_LAST, POOLING_RANK = 0, 1, 2, 3, 4
POOLING_NAMES = {
    POOLING_NONE: "none",
    POOLING_MEAN: "mean",
    POOLING_CLS: "cls",
    POOLING_LAST: "last",
    POOLING_RANK: "rank",
}

# Architectures that only encode (bidirectional attention, no language-model head): never chat models.
ENCODER_ARCHITECTURES = frozenset(
    {"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2", "jina-bert-v3", "modern-bert", "neo-bert", "t5encoder"}
)


def pooling_type(metadata: Mapping[str, object]) -> Optional[int]:
    """The file's `<arch>.pooling_type`, or None when it names none."""
    value = metadata.get(f"{metadata.get('general.architecture', '')}.pooling_type")
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def model_kind(metadata: Mapping[str, object]) -> ModelKind:
    """What the model in a file with this header is for."""
    architecture = str(metadata.get("general.architecture", ""))
    pooling = pooling_type(metadata)
    if pooling == POOLING_RANK:
        return "reranker"
    if architecture in ENCODER_ARCHITECTURES:
        return "embedding"
    if pooling not in (None, POOLING_NONE) and not isinstance(metadata.get("tokenizer.chat_template"), str):
        return "embedding"  # a decoder trained to embed (Qwen3-Embedding): pooled, and no template to chat with
    return "chat"


def not_chat_sentence(kind: ModelKind) -> str:
    """Why a model of `kind` is not offered as a chat model (empty for a chat model)."""
    if kind == "embedding":
        return (
            "An embedding model: it turns text into vectors for document search (serve --embedding), and cannot chat."
        )
    if kind == "reranker":
        return "A reranker: it scores documents against a question (serve --embedding), and cannot chat."
    return ""
