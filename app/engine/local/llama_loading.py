"""Opening a GGUF model through llama.cpp: the backend and its log, the model's and its context's parameters as
LoadSettings names them, and a sentence from the log when llama.cpp refuses.

LoadedModel (llama_model.py) opens its handles here and works with them; only the engine process's main thread may
call these.
"""

from __future__ import annotations

import collections
import ctypes
import os
import threading
from typing import Any, Optional, Sequence

from app.engine.config import MAX_OUTPUT_ROWS, FlashAttn, KvType
from app.engine.errors import ModelLoadError
from app.engine.gguf.memory import capped_context

_log_lock = threading.Lock()
_recent_log: collections.deque[str] = collections.deque(maxlen=40)
_log_callback = None  # kept referenced: llama.cpp holds a raw pointer to it


def install_log_capture() -> None:
    """Keep llama.cpp's log off the terminal (it is very chatty) but remember the tail for error messages."""
    global _log_callback
    if _log_callback is not None:
        return
    import llama_cpp

    echo = bool(os.environ.get("SPECCHAT_LLAMA_LOG"))

    @llama_cpp.llama_log_callback
    def capture(level: int, text: bytes, _user_data: ctypes.c_void_p) -> None:
        line = text.decode("utf-8", errors="replace")
        with _log_lock:
            _recent_log.append(line)
        if echo:
            os.write(2, text)

    _log_callback = capture
    llama_cpp.llama_log_set(capture, ctypes.c_void_p(0))
    llama_cpp.llama_backend_init()


def log_callback() -> Any:
    """The capture llama.cpp logs through (None before the first model loads), for mtmd's log to join it."""
    return _log_callback


def forget_log() -> None:
    """Drop the log's tail, so the next refusal names only what comes after."""
    with _log_lock:
        _recent_log.clear()


def recent_errors() -> str:
    """The log's last errors (else its last lines), joined in one line: why llama.cpp just refused."""
    with _log_lock:
        lines = [ln.strip() for ln in _recent_log if ln.strip()]
    interesting = [ln for ln in lines if "error" in ln.lower() or "failed" in ln.lower()]
    return "; ".join((interesting or lines)[-3:])


def _load_mode(llama_cpp, mmap: bool, mlock: bool) -> int:
    """llama.cpp's load mode for the two switches; mmap alone is its Auto (mapped where the file system allows)."""
    if mlock:
        return llama_cpp.LLAMA_LOAD_MODE_MMAP_MLOCK if mmap else llama_cpp.LLAMA_LOAD_MODE_MLOCK
    return llama_cpp.LLAMA_LOAD_MODE_AUTO if mmap else llama_cpp.LLAMA_LOAD_MODE_NONE


def open_model(
    llama_cpp, path: str, *, n_gpu_layers: int, devices: Optional[Sequence[int]], mmap: bool, mlock: bool
) -> Any:
    """llama.cpp's model handle for the file at `path`; ModelLoadError, with llama.cpp's reason, when it refuses."""
    mparams = llama_cpp.llama_model_default_params()
    mparams.n_gpu_layers = n_gpu_layers
    mparams.load_mode = _load_mode(llama_cpp, mmap, mlock)
    device_list = None
    if devices is not None:
        from app.engine.placement.rpc import device_array

        device_list = device_array(devices)  # referenced until the load returns
        mparams.devices = ctypes.cast(device_list, ctypes.c_void_p)
    with _log_lock:
        _recent_log.clear()
    model = llama_cpp.llama_model_load_from_file(path.encode("utf-8"), mparams)
    if not model:
        detail = recent_errors() or "no details from llama.cpp"
        raise ModelLoadError(f"llama.cpp could not load {os.path.basename(path)}: {detail}")
    del device_list
    return model


def context_params(
    llama_cpp,
    model: Any,
    *,
    n_ctx: int,
    n_seq_max: int,
    n_batch: int,
    flash_attn: FlashAttn,
    kv_type: KvType,
    n_threads: int,
) -> Any:
    """The parameters of a context for `model`: `n_ctx` cells shared by `n_seq_max` sequences, each capped at the
    trained context (never their sum: N requests each get what one would)."""
    n_ctx_train = llama_cpp.llama_model_n_ctx_train(model)
    cparams = llama_cpp.llama_context_default_params()
    sequences = max(1, n_seq_max)
    cparams.n_ctx = capped_context(n_ctx // sequences, n_ctx_train) * sequences
    # A verify batch is one decode with a row of logits per token, so no batch is smaller than the longest one.
    n_batch = max(MAX_OUTPUT_ROWS, n_batch)
    cparams.n_batch = n_batch
    cparams.n_ubatch = n_batch
    cparams.flash_attn_type = {
        "auto": llama_cpp.LLAMA_FLASH_ATTN_TYPE_AUTO,
        "on": llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED,
        "off": llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED,
    }[flash_attn]
    cache_type = {
        "f16": llama_cpp.GGML_TYPE_F16,
        "q8_0": llama_cpp.GGML_TYPE_Q8_0,
        "q4_0": llama_cpp.GGML_TYPE_Q4_0,
    }[kv_type]
    cparams.type_k = cache_type
    cparams.type_v = cache_type
    cparams.n_seq_max = sequences
    # One buffer for every sequence: a short reply leaves its cells to a long one (llama-server's default).
    cparams.kv_unified = n_seq_max > 1
    cparams.n_outputs_max = MAX_OUTPUT_ROWS
    cparams.n_threads = n_threads
    cparams.n_threads_batch = n_threads
    cparams.no_perf = True
    return cparams
