"""A picture's size in tokens as llama.cpp's mtmd gives it, computed here apart from the engine: the text model and
its projector loaded straight through llama-cpp-python's bindings, the default marker tokenized with the picture,
and mtmd_helper_get_n_tokens over the chunks (the picture's tokens and any text mtmd puts around it)."""

from __future__ import annotations

import ctypes
from pathlib import Path


def mtmd_picture_tokens(model: Path, mmproj: Path, picture: bytes) -> int:
    import llama_cpp
    from llama_cpp import mtmd_cpp as mtmd

    llama_cpp.llama_backend_init()
    params = llama_cpp.llama_model_default_params()
    params.n_gpu_layers = 0
    text_model = llama_cpp.llama_model_load_from_file(str(model).encode(), params)
    assert text_model
    ctx_params = mtmd.mtmd_context_params_default()
    ctx_params.use_gpu = False
    ctx_params.print_timings = False
    ctx_params.warmup = False
    ctx = mtmd.mtmd_init_from_file(str(mmproj).encode(), text_model, ctx_params)
    assert ctx
    buf = (ctypes.c_uint8 * len(picture)).from_buffer_copy(picture)
    bitmap = mtmd.mtmd_helper_bitmap_init_from_buf(ctx, buf, len(picture), False)
    chunks = mtmd.mtmd_input_chunks_init()
    try:
        marker = mtmd.mtmd_default_marker()
        text = mtmd.mtmd_input_text(text=marker, text_len=len(marker), add_special=False, parse_special=True)
        bitmaps = (mtmd.mtmd_bitmap_p_ctypes * 1)(bitmap)
        assert mtmd.mtmd_tokenize(ctx, chunks, ctypes.byref(text), bitmaps, 1) == 0
        return mtmd.mtmd_helper_get_n_tokens(chunks)
    finally:
        mtmd.mtmd_input_chunks_free(chunks)
        mtmd.mtmd_bitmap_free(bitmap)
        mtmd.mtmd_free(ctx)
        llama_cpp.llama_model_free(text_model)
