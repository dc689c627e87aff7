"""The real embedding model's converter (tests/support/real_embedding.py) on a tiny BERT checkpoint written here:
its safetensors read back as written, its names land in llama.cpp's BERT layout, and llama.cpp loads the result."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from app.engine.embedding.model import Embedder
from tests.support.real_embedding import convert_checkpoint, gguf_tensors, read_safetensors, wordpiece_vocab

DIM, FFN, LAYERS, CONTEXT = 16, 32, 1, 64
VOCAB = ["[PAD]", "[unused0]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "##s", "a", "mat", "."]


def safetensors_bytes(tensors: dict[str, np.ndarray]) -> bytes:
    header: dict = {"__metadata__": {"format": "pt"}}
    data, offset = b"", 0
    for name, array in tensors.items():
        raw = array.tobytes()
        dtype = {"float32": "F32", "float16": "F16", "int64": "I64"}[array.dtype.name]
        header[name] = {"dtype": dtype, "shape": list(array.shape), "data_offsets": [offset, offset + len(raw)]}
        data, offset = data + raw, offset + len(raw)
    text = json.dumps(header).encode()
    return len(text).to_bytes(8, "little") + text + data


def tiny_bert() -> dict[str, np.ndarray]:
    """A one-layer BERT checkpoint under Hugging Face's names, random weights and unit layer norms."""
    rng = np.random.default_rng(3)

    def matrix(rows: int, cols: int) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * 0.1).astype(np.float32)

    def vector(n: int, fill: float = 0.0) -> np.ndarray:
        return np.full(n, fill, dtype=np.float32)

    weights = {
        "embeddings.position_ids": np.arange(CONTEXT, dtype=np.int64)[None, :],
        "embeddings.word_embeddings.weight": matrix(len(VOCAB), DIM),
        "embeddings.position_embeddings.weight": matrix(CONTEXT, DIM),
        "embeddings.token_type_embeddings.weight": matrix(2, DIM),
        "embeddings.LayerNorm.weight": vector(DIM, 1.0),
        "embeddings.LayerNorm.bias": vector(DIM),
    }
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}"
        for part in ("attention.self.query", "attention.self.key", "attention.self.value", "attention.output.dense"):
            weights[f"{p}.{part}.weight"], weights[f"{p}.{part}.bias"] = matrix(DIM, DIM), vector(DIM)
        weights[f"{p}.intermediate.dense.weight"], weights[f"{p}.intermediate.dense.bias"] = (
            matrix(FFN, DIM),
            vector(FFN),
        )
        weights[f"{p}.output.dense.weight"], weights[f"{p}.output.dense.bias"] = matrix(DIM, FFN), vector(DIM)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            weights[f"{p}.{norm}.weight"], weights[f"{p}.{norm}.bias"] = vector(DIM, 1.0), vector(DIM)
    return weights


def write_checkpoint(path, weights: dict[str, np.ndarray], *, pooling: str = "pooling_mode_mean_tokens"):
    config = {
        "hidden_size": DIM,
        "intermediate_size": FFN,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": 2,
        "max_position_embeddings": CONTEXT,
        "layer_norm_eps": 1e-12,
        "type_vocab_size": 2,
    }
    tokenizer = {"model": {"type": "WordPiece", "vocab": {piece: i for i, piece in enumerate(VOCAB)}}}
    with zipfile.ZipFile(path, "w") as folder:
        folder.writestr("config.json", json.dumps(config))
        folder.writestr("1_Pooling/config.json", json.dumps({pooling: True}))
        folder.writestr("tokenizer.json", json.dumps(tokenizer))
        folder.writestr("model.safetensors", safetensors_bytes(weights))
    return path


def test_safetensors_read_back_as_written_and_a_foreign_dtype_is_named():
    weights = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.array([[7]], dtype=np.int64)}
    read = read_safetensors(safetensors_bytes(weights))
    assert set(read) == {"a", "b"}
    assert np.array_equal(read["a"], weights["a"]) and np.array_equal(read["b"], weights["b"])

    header = json.dumps({"x": {"dtype": "BF16", "shape": [1], "data_offsets": [0, 2]}}).encode()
    with pytest.raises(ValueError, match="x has the dtype BF16"):
        read_safetensors(len(header).to_bytes(8, "little") + header + b"\0\0")
    with pytest.raises(ValueError, match="shorter than its header length"):
        read_safetensors(b"\1")


def test_names_map_to_llama_cpp_bert_and_matrices_become_float16():
    tensors = dict(gguf_tensors(tiny_bert(), LAYERS, f16=True))
    assert "embeddings.position_ids" not in tensors and len(tensors) == 5 + 16 * LAYERS
    assert tensors["token_embd.weight"].dtype == np.float16
    assert tensors["blk.0.ffn_up.weight"].shape == (FFN, DIM) and tensors["blk.0.ffn_up.weight"].dtype == np.float16
    assert tensors["blk.0.layer_output_norm.weight"].dtype == np.float32
    assert tensors["position_embd.weight"].dtype == tensors["token_types.weight"].dtype == np.float32
    with pytest.raises(ValueError, match="encoder.layer.0.crossattention.weight has no place"):
        dict(gguf_tensors({"encoder.layer.0.crossattention.weight": np.zeros((2, 2))}, LAYERS, f16=False))


def test_wordpiece_pieces_are_stored_as_llama_cpp_reads_them():
    vocab = wordpiece_vocab({"model": {"type": "WordPiece", "vocab": {p: i for i, p in enumerate(VOCAB)}}})
    assert vocab.tokens[:3] == ["[PAD]", "[unused0]", "[UNK]"]
    assert vocab.tokens[6] == "\u2581the" and vocab.tokens[9] == "s"
    assert (vocab.cls_id, vocab.sep_id, vocab.unk_id, vocab.pad_id, vocab.mask_id) == (3, 4, 2, 0, 5)


def test_the_converted_checkpoint_loads_and_embeds(tmp_path):
    model_path = convert_checkpoint(write_checkpoint(tmp_path / "model.zip", tiny_bert()), tmp_path / "tiny.gguf")
    model = Embedder(model_path, n_threads=1)
    try:
        cats, cat, mat = model.embed(["the cats sat", "the cat sat", "a mat."])
    finally:
        model.close()
    assert model.dim == DIM and np.isfinite([cats, cat, mat]).all()
    assert not np.allclose(cat, mat) and not np.allclose(cats, cat)  # "##s" tokenizes: "cats" is not "cat"


def test_a_checkpoint_that_pools_otherwise_is_refused_in_one_sentence(tmp_path):
    archive = write_checkpoint(tmp_path / "model.zip", tiny_bert(), pooling="pooling_mode_cls_token")
    with pytest.raises(ValueError, match="pools other than by the tokens' mean"):
        convert_checkpoint(archive, tmp_path / "cls.gguf")
    assert not (tmp_path / "cls.gguf").exists()
