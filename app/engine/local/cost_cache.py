"""Measured cost tables on disk, one per (model file, threads, GPU layers and their backend, llama.cpp build).

The table itself and the estimate to start from are app.engine.speculation.costs; this keys them by the loaded
models, which only the engine process holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from app.common.json_cache import read_cache, write_cache
from app.engine.local.llama_model import LoadedModel
from app.engine.speculation.costs import MEASURED_SIZES, CostTable
from app.platform.paths import user_cache_dir

_CACHE_VERSION = 6  # 6: batches up to 64


def model_key(model: LoadedModel, n_threads: int, gpu_layers: int, backends: str) -> str:
    import llama_cpp

    st = model.path.stat()
    # The devices are part of the key: a model with layers on a GPU must never be timed by its CPU costs.
    where = f"g{gpu_layers}@{backends}" if gpu_layers > 0 else "g0"  # "g0": what CPU runs were saved as before
    return f"{model.path.resolve()}|{st.st_size}|{st.st_mtime_ns}|t{n_threads}|{where}|{llama_cpp.__version__}"


def _cache_file() -> Path:
    return user_cache_dir() / "forward-costs.json"


def _read_cache() -> dict:
    """Measured costs by model_key; entries of any other shape than a list of seconds are left out."""
    return {
        key: batch
        for key, batch in read_cache(_cache_file(), _CACHE_VERSION).items()
        if isinstance(batch, list)
        and len(batch) >= 2
        and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in batch)
    }


def _write_cache(data: dict) -> None:
    write_cache(_cache_file(), _CACHE_VERSION, data)  # a cache we cannot write only costs a re-measurement


def _keys(target: LoadedModel, draft: LoadedModel | None, n_threads: int, gpu_layers: tuple[int, int], backends: str):
    """Cache keys of the target and (None without one) the draft."""
    return (
        model_key(target, n_threads, gpu_layers[0], backends),
        model_key(draft, n_threads, gpu_layers[1], backends) if draft is not None else None,
    )


def cached_costs(
    target: LoadedModel,
    draft: LoadedModel | None,
    n_threads: int,
    gpu_layers: tuple[int, int],
    backends: str = "CPU",
    measured: Optional[dict[str, list[float]]] = None,
) -> Optional[CostTable]:
    """The measured cost table of this pair from the disk cache, or None when part of it was never measured.

    `gpu_layers` are the layers offloaded (resolved, never Auto; 0 on a build without a GPU backend) and `backends`
    where they run ("CUDA", "Metal"): both are part of the cache key. `measured` (by model_key) is consulted
    before the disk: what was just measured counts even when the cache could not be written."""
    cache = {**_read_cache(), **(measured or {})}
    tkey, dkey = _keys(target, draft, n_threads, gpu_layers, backends)
    if tkey not in cache or (dkey is not None and dkey not in cache):
        return None
    table = CostTable(batch=list(cache[tkey]), measured=MEASURED_SIZES)
    if dkey is not None:
        table.draft_per_token = cache[dkey][1]
    return table


def store_measurement(model: LoadedModel, n_threads: int, gpu_layers: int, backends: str, batch: list[float]) -> None:
    """Keep one model's measured costs (`batch[n]`, index 0 unused) on disk."""
    cache = _read_cache()
    cache[model_key(model, n_threads, gpu_layers, backends)] = batch
    _write_cache(cache)


def forget_measurement(
    target: LoadedModel, draft: LoadedModel | None, n_threads: int, gpu_layers: tuple[int, int], backends: str = "CPU"
) -> None:
    """Drop the pair's measured costs from disk (found wrong): idle time measures them again."""
    cache = _read_cache()
    for key in _keys(target, draft, n_threads, gpu_layers, backends):
        cache.pop(key, None)
    _write_cache(cache)
