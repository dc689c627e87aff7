"""A tiny vision model written on the spot: synthetic.py's tiny language model plus a tiny mmproj beside it.

The mmproj is a LLaVA-style projector (llama.cpp's projector type `mlp`), the type with the fewest tensors: a patch
embedding (a convolution over the picture's patches), position embeddings and a two-layer MLP into the language
model's embedding space. Its vision encoder has no transformer layers, so an image of IMAGE_SIZE pixels square is
IMAGE_TOKENS tokens of the target's context, and mtmd evaluates it in a few milliseconds. Weights are random (seeded),
so the output means nothing, but it depends on every pixel, which is what a test of the image path needs.

Tensor names and metadata keys follow llama.cpp's tools/mtmd (clip-impl.h and the loader in clip.cpp).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from app.common.atomic_write import atomic_file
from app.testing.synthetic import DRAFT_LAYERS, LAYER_SCALE, TARGET_LAYERS, TinyShape, write_tiny_model

IMAGE_SIZE = 32  # pixels per side; mtmd scales (and pads) every picture to this
PATCH_SIZE = 8
IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2
VISION_EMBD = 32  # the vision encoder's width
PROJECTOR_HIDDEN = 96
PROJECTOR_TYPE = "mlp"


@dataclass(frozen=True)
class VisionModelSet:
    target: Path  # a tiny language model (synthetic.py's target)
    mmproj: Path  # its projector, named as llama.cpp's converters name them
    draft: Path  # a 1-layer draft sharing the target's vocabulary (it does not see images)


def write_tiny_mmproj(path: Path, *, text_embd: int = TinyShape().n_embd, seed: int = 0) -> Path:
    """Write a tiny `mlp` mmproj for a language model of width `text_embd` to `path` (atomically)."""
    import gguf

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng([seed, 46])

    def normal(*shape: int, scale: float) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    n_pos = IMAGE_TOKENS
    patch_inputs = 3 * PATCH_SIZE * PATCH_SIZE
    # numpy shapes are ggml's dimensions reversed: the patch embedding is ggml [patch, patch, 3, n_embd].
    tensors = {
        "v.patch_embd.weight": normal(VISION_EMBD, 3, PATCH_SIZE, PATCH_SIZE, scale=patch_inputs**-0.5),
        "v.patch_embd.bias": normal(VISION_EMBD, scale=0.1),
        "v.position_embd.weight": normal(n_pos, VISION_EMBD, scale=0.1),
        "mm.0.weight": normal(PROJECTOR_HIDDEN, VISION_EMBD, scale=VISION_EMBD**-0.5),
        "mm.0.bias": normal(PROJECTOR_HIDDEN, scale=0.1),
        "mm.2.weight": normal(text_embd, PROJECTOR_HIDDEN, scale=PROJECTOR_HIDDEN**-0.5),
        "mm.2.bias": normal(text_embd, scale=0.1),
    }
    with atomic_file(path, durable=False, mode=0o644) as tmp_name:
        writer = gguf.GGUFWriter(tmp_name, "clip")
        writer.add_name(path.stem)
        writer.add_file_type(int(gguf.LlamaFileType.ALL_F32))
        writer.add_clip_has_vision_encoder(True)
        writer.add_clip_projector_type(PROJECTOR_TYPE)
        writer.add_vision_image_size(IMAGE_SIZE)
        writer.add_vision_patch_size(PATCH_SIZE)
        writer.add_vision_embedding_length(VISION_EMBD)
        writer.add_vision_feed_forward_length(2 * VISION_EMBD)
        writer.add_vision_block_count(0)
        writer.add_vision_head_count(2)
        writer.add_vision_attention_layernorm_eps(1e-6)
        writer.add_vision_projection_dim(text_embd)
        writer.add_vision_image_mean([0.5, 0.5, 0.5])
        writer.add_vision_image_std([0.5, 0.5, 0.5])
        writer.add_vision_use_gelu(True)
        for name, tensor in tensors.items():
            writer.add_tensor(name, tensor)
        writer.write_header_to_file()
        writer.write_kv_data_to_file()
        writer.write_tensors_to_file()
        writer.close()
    return path


def make_vision_model_set(dest: Path) -> VisionModelSet:
    """Write the tiny vision pair (and a draft for it) under `dest`, each file once, and return the paths."""
    dest = Path(dest)
    models = VisionModelSet(
        target=dest / "tiny-vision.gguf",
        mmproj=dest / "mmproj-tiny-vision.gguf",
        draft=dest / "tiny-draft-for-vision.gguf",
    )
    if not models.target.is_file():
        write_tiny_model(models.target, seed=0, n_layer=TARGET_LAYERS, layer_scale=LAYER_SCALE, name="Tiny Vision")
    if not models.draft.is_file():
        write_tiny_model(models.draft, seed=0, n_layer=DRAFT_LAYERS, layer_scale=LAYER_SCALE, name="Tiny Vision Draft")
    if not models.mmproj.is_file():
        write_tiny_mmproj(models.mmproj)
    return models
