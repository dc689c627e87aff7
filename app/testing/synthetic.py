"""Tiny GGUF models written on the spot, so tests, the bundle self-test and benchmarks run offline in seconds.

The models are llama-architecture transformers with random weights and a byte-level BPE vocabulary (GPT-2 style),
small enough that llama.cpp loads one and generates 64 tokens in a few milliseconds. `make_model_set` writes the
whole family the app needs to exercise: a target, drafts that agree with it partly or fully, drafts that break each
of llama.cpp's compatibility rules, and broken files.

gguf is a runtime dependency of the app, so this module may be imported outside the tests.
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Callable, Iterable, Optional, Sequence, Union

import numpy as np

from app.common.atomic_write import atomic_file, write_atomic
from app.testing.vocab import VOCAB_VARIANTS, Vocab, VocabSpec, build_vocab

# Bump when the files written below change, so a reused model set folder is rewritten rather than trusted.
SYNTHETIC_VERSION = 1
_STAMP_NAME = ".specchat-synthetic-version"

CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)


@dataclass(frozen=True)
class TinyShape:
    n_embd: int = 64
    n_head: int = 4
    n_head_kv: int = 2
    n_ff: int = 128
    context_length: int = 2048


def write_tiny_model(
    path: Path,
    *,
    seed: int = 0,
    n_layer: int = 8,
    shape: TinyShape = TinyShape(),
    layer_scale: float = 1.0,
    vocab_variant: Union[str, VocabSpec] = "standard",
    name: str | None = None,
    extra_metadata: Sequence[tuple[str, object]] = (),
    edit: Optional[Callable[[Any], None]] = None,
) -> Path:
    """Write one tiny llama-architecture model to `path` (atomically) and return the path.

    Weights come from `seed` per layer: two models with the same seed share their embeddings, output head and
    first layers, so a model with fewer layers is a natural draft for one with more. `layer_scale` scales what each
    layer adds to the residual stream: small values make every layer count less and the models agree more.
    `extra_metadata` adds raw (key, value) pairs, e.g. split keys; ints are written as uint16 for "split." keys,
    uint32 otherwise. `edit` receives the gguf.GGUFWriter with every key and tensor added, before anything is
    written, so a test can damage the file (tests.support.malformed_models does).
    """
    spec = VOCAB_VARIANTS[vocab_variant] if isinstance(vocab_variant, str) else vocab_variant
    vocab = build_vocab(spec)
    dims = LlamaDims(shape.n_embd, n_layer, shape.n_head, shape.n_head_kv, shape.n_ff, shape.context_length)
    return write_llama_file(
        path,
        vocab,
        dims,
        _weights(vocab, shape, n_layer, seed, layer_scale),
        name=name,
        extra_metadata=extra_metadata,
        edit=edit,
    )


@dataclass(frozen=True)
class LlamaDims:
    """A llama-architecture model's dimensions, as its GGUF keys state them."""

    n_embd: int
    n_layer: int
    n_head: int
    n_head_kv: int
    n_ff: int
    context_length: int = 32768  # Qwen2.5's


def write_llama_file(
    path: Path,
    vocab: Vocab,
    dims: LlamaDims,
    tensors: Iterable[tuple[str, np.ndarray]],
    *,
    f16: bool = False,
    name: str | None = None,
    extra_metadata: Sequence[tuple[str, object]] = (),
    edit: Optional[Callable[[Any], None]] = None,
) -> Path:
    """Write a llama-architecture GGUF file of `dims`, `vocab` and the (name, array) `tensors` to `path`
    (atomically: a reader never sees half a file) and return the path. `f16`: the file says its weights are
    16-bit (write them so); else 32-bit. `extra_metadata` and `edit` as write_tiny_model's."""
    import gguf

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # A model file is an ordinary file, readable by all (0o644), not a private one.
    with atomic_file(path, durable=False, mode=0o644) as tmp_name:
        writer = gguf.GGUFWriter(tmp_name, "llama")
        writer.add_name(name or path.stem)
        writer.add_file_type(int(gguf.LlamaFileType.MOSTLY_F16 if f16 else gguf.LlamaFileType.ALL_F32))
        writer.add_context_length(dims.context_length)
        writer.add_embedding_length(dims.n_embd)
        writer.add_block_count(dims.n_layer)
        writer.add_feed_forward_length(dims.n_ff)
        writer.add_head_count(dims.n_head)
        writer.add_head_count_kv(dims.n_head_kv)
        writer.add_layer_norm_rms_eps(1e-5)
        writer.add_rope_dimension_count(dims.n_embd // dims.n_head)
        writer.add_vocab_size(len(vocab.tokens))
        _add_vocab(writer, vocab)
        for key, value in extra_metadata:
            if isinstance(value, bool):
                writer.add_bool(key, value)
            elif isinstance(value, int):
                (writer.add_uint16 if key.startswith("split.") else writer.add_uint32)(key, value)
            else:
                writer.add_string(key, str(value))
        for tensor_name, tensor in tensors:
            writer.add_tensor(tensor_name, tensor)
        if edit is not None:
            edit(writer)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    return path


def _add_vocab(writer, vocab: Vocab) -> None:
    writer.add_tokenizer_model(vocab.model)
    if vocab.model == "gpt2":
        writer.add_tokenizer_pre("gpt-2")
        writer.add_token_merges(vocab.merges)
    writer.add_token_list(vocab.tokens)
    writer.add_token_types(vocab.token_types)
    if vocab.scores is not None:
        writer.add_token_scores(vocab.scores)
    writer.add_bos_token_id(vocab.bos_id)
    writer.add_eos_token_id(vocab.eos_id)
    if vocab.eot_id is not None:
        writer.add_eot_token_id(vocab.eot_id)
    writer.add_add_bos_token(vocab.add_bos)
    writer.add_add_eos_token(vocab.add_eos)
    writer.add_chat_template(CHATML_TEMPLATE)


def _weights(vocab: Vocab, shape: TinyShape, n_layer: int, seed: int, layer_scale: float):
    """(name, float32 array) pairs in llama.cpp's llama layout; numpy shapes are ggml's dimensions reversed."""
    d, n_vocab = shape.n_embd, len(vocab.tokens)
    head_dim = d // shape.n_head
    d_kv = head_dim * shape.n_head_kv

    def normal(rng: np.random.Generator, rows: int, cols: int, scale: float) -> np.ndarray:
        return (rng.standard_normal((rows, cols)) * scale).astype(np.float32)

    # Rows per token id come from the id's own stream, so vocabularies that share ids share those rows.
    embd = np.stack([normal(np.random.default_rng([seed, 1, i]), 1, d, 1.0)[0] for i in range(n_vocab)])
    output = np.zeros((n_vocab, d), dtype=np.float32)
    for i in vocab.output_ids:
        output[i] = normal(np.random.default_rng([seed, 2, i]), 1, d, 1.0)[0]
    yield "token_embd.weight", embd
    yield "output_norm.weight", np.ones(d, dtype=np.float32)
    yield "output.weight", output

    for layer in range(n_layer):
        rng = np.random.default_rng([seed, 3, layer])
        prefix = f"blk.{layer}"
        yield f"{prefix}.attn_norm.weight", np.ones(d, dtype=np.float32)
        yield f"{prefix}.attn_q.weight", normal(rng, d, d, d**-0.5)
        yield f"{prefix}.attn_k.weight", normal(rng, d_kv, d, d**-0.5)
        yield f"{prefix}.attn_v.weight", normal(rng, d_kv, d, d**-0.5)
        yield f"{prefix}.attn_output.weight", normal(rng, d, d, layer_scale * d**-0.5)
        yield f"{prefix}.ffn_norm.weight", np.ones(d, dtype=np.float32)
        yield f"{prefix}.ffn_gate.weight", normal(rng, shape.n_ff, d, d**-0.5)
        yield f"{prefix}.ffn_up.weight", normal(rng, shape.n_ff, d, d**-0.5)
        yield f"{prefix}.ffn_down.weight", normal(rng, d, shape.n_ff, layer_scale * shape.n_ff**-0.5)


@dataclass(frozen=True)
class ModelSet:
    """Paths of the synthetic model family. Every compatible draft shares the target's vocabulary."""

    target: Path
    draft: Path  # fewer layers, shared embeddings: greedy acceptance is partial
    draft_identical: Path  # the target's exact weights in another file: acceptance 100%
    bad_vocab_type: Path  # SentencePiece vocabulary
    bad_bos: Path  # adds a BOS token, the target does not
    bad_eos: Path  # adds an EOS token, the target does not
    bad_vocab_size: Path  # 200 extra tokens (llama.cpp allows 128)
    bad_token_text: Path  # one token's text differs
    ok_vocab_size_close: Path  # 8 extra tokens: still compatible
    truncated: Path  # a valid model cut in half
    not_gguf: Path  # random bytes
    split_part: Path  # part 1 of a 2-part split whose part 2 is missing
    split_part_second: Path  # part 2 of 2 of a split, alone in its folder

    def all_paths(self) -> list[Path]:
        return [getattr(self, f.name) for f in fields(self)]


TARGET_LAYERS = 8
DRAFT_LAYERS = 1
# What each layer adds to the residual stream relative to the token embedding. Measured greedy acceptance of the
# 1-layer draft against the 8-layer target (tests/testing/test_synthetic_models.py): 1.0 gives ~20%, 0.1 ~75%, 0.2 ~50%.
# The draft has about a quarter of the target's parameters, like a real 0.5B draft for a 1.5B-7B target.
LAYER_SCALE = 0.2


def make_model_set(dest: Path) -> ModelSet:
    """Write (or reuse) the synthetic model family under `dest` and return its paths."""
    dest = Path(dest)
    models = ModelSet(
        target=dest / "tiny-target.gguf",
        draft=dest / "tiny-draft.gguf",
        draft_identical=dest / "tiny-draft-identical.gguf",
        bad_vocab_type=dest / "tiny-bad-vocab-type.gguf",
        bad_bos=dest / "tiny-bad-bos.gguf",
        bad_eos=dest / "tiny-bad-eos.gguf",
        bad_vocab_size=dest / "tiny-bad-vocab-size.gguf",
        bad_token_text=dest / "tiny-bad-token-text.gguf",
        ok_vocab_size_close=dest / "tiny-ok-vocab-size-close.gguf",
        truncated=dest / "tiny-truncated.gguf",
        not_gguf=dest / "tiny-not-gguf.gguf",
        split_part=dest / "split-a" / "tiny-00001-of-00002.gguf",
        split_part_second=dest / "split-b" / "tiny-00002-of-00002.gguf",
    )
    stamp = dest / _STAMP_NAME
    if stamp.is_file() and stamp.read_text().strip() == str(SYNTHETIC_VERSION):
        if all(p.is_file() for p in models.all_paths()):
            return models

    def model(
        path: Path,
        *,
        n_layer: int = TARGET_LAYERS,
        variant: str = "standard",
        name: str | None = None,
        extra: Sequence[tuple[str, object]] = (),
    ) -> None:
        write_tiny_model(
            path,
            seed=0,
            n_layer=n_layer,
            layer_scale=LAYER_SCALE,
            vocab_variant=variant,
            name=name,
            extra_metadata=extra,
        )

    model(models.target, name="Tiny Target")
    model(models.draft, n_layer=DRAFT_LAYERS, name="Tiny Draft")
    model(models.draft_identical, name="Tiny Draft (identical)")
    model(models.bad_vocab_type, n_layer=DRAFT_LAYERS, variant="spm", name="Tiny SPM")
    model(models.bad_bos, n_layer=DRAFT_LAYERS, variant="add_bos", name="Tiny Add-BOS")
    model(models.bad_eos, n_layer=DRAFT_LAYERS, variant="add_eos", name="Tiny Add-EOS")
    model(models.bad_vocab_size, n_layer=DRAFT_LAYERS, variant="extra_200", name="Tiny Big Vocab")
    model(models.bad_token_text, n_layer=DRAFT_LAYERS, variant="renamed_token", name="Tiny Renamed Token")
    model(models.ok_vocab_size_close, n_layer=DRAFT_LAYERS, variant="extra_8", name="Tiny Close Vocab")
    model(models.split_part, name="Tiny Split", extra=[("split.no", 0), ("split.count", 2)])
    model(models.split_part_second, name="Tiny Split", extra=[("split.no", 1), ("split.count", 2)])

    whole = models.target.read_bytes()
    write_atomic(models.truncated, whole[: len(whole) // 2])
    write_atomic(models.not_gguf, np.random.default_rng(7).bytes(4096))
    write_atomic(stamp, str(SYNTHETIC_VERSION).encode())
    return models
