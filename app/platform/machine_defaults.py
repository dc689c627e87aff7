"""Defaults the stored settings and the engine share, so that storage need not import the engine: CPU threads
and the GPU-layers settings' special values."""

from __future__ import annotations

import os


def default_threads() -> int:
    """All cores, or SPECCHAT_THREADS. llama.cpp's worker threads spin while they wait for each other, so on a
    machine where something else keeps a core busy fewer threads can be much faster (and tests use one)."""
    try:
        return max(1, int(os.environ["SPECCHAT_THREADS"]))
    except (KeyError, ValueError):
        return max(1, os.cpu_count() or 1)


# GPU layers: Auto offloads what fits in free device memory (app.engine.placement.gpu_fit); a number is used as it is.
GPU_LAYERS_AUTO = -1
# More layers than any model has: llama.cpp then offloads every layer and the output head.
GPU_LAYERS_ALL = 999
