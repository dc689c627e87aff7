"""What a forward pass costs on this machine: the target's time for a batch of n tokens, the draft's per token.

Measured once per (model file, threads, GPU layers and their backend, llama.cpp build) and cached on disk, because
the answer decides whether speculation can pay at all: on a 2-core CPU a verify batch of 9 costs ~4.4x one token, on
a GPU ~1x.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from app.atomic_write import write_atomic
from app.engine.llama_model import LoadedModel
from app.paths import user_cache_dir

MAX_BATCH = 32  # verify batches up to draft_max 31: long drafts are how copying text pays on a CPU
# Sizes measured; the rest are interpolated, and the controller corrects each size it uses from what it observes.
# Measuring every size would take several times longer. Powers of two are in the set because CPU kernels work in
# blocks, so a power of two can cost less than the size below it (figures: docs/performance.md).
MEASURED_SIZES = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32)
# A measured size may cost this much more than a larger one (kernel block sizes make that real); beyond it, the
# measurement was disturbed by another process.
_INVERSION_LIMIT = 1.1
# Batches are timed after this many tokens of context, about a system prompt and a question: attention makes
# batches relatively dearer as the context grows (docs/performance.md).
MEASURE_CONTEXT = 256
_CACHE_VERSION = 5


@dataclass
class CostTable:
    """Seconds per forward pass. `batch[n]` is the target's cost for n tokens (index 0 unused)."""

    batch: list[float] = field(default_factory=list)
    draft_per_token: float = 0.0
    # The sizes that were measured, when the rest were interpolated (None: every entry was measured). Between
    # measured sizes the real cost can be well above the line (docs/performance.md), so only measured sizes are
    # chosen.
    measured: Optional[tuple[int, ...]] = None

    def is_measured(self, n: int) -> bool:
        return self.measured is None or n in self.measured

    def verify(self, n: int) -> float:
        if n < len(self.batch):
            return self.batch[n]
        # Past what was measured, extrapolate linearly from the last two points.
        last, prev = self.batch[-1], self.batch[-2]
        return last + (n - len(self.batch) + 1) * max(last - prev, 0.0)

    def relative(self) -> list[float]:
        """Batch costs as multiples of one token (for explanations and tests)."""
        return [c / self.batch[1] for c in self.batch[1:]]


def _clean(points: dict[int, float]) -> dict[int, float]:
    """Remove what contention adds: no batch costs more than that many single-token passes, nor much more than a
    larger batch. A spike (another process took the CPU for one measurement) is pulled down to the cheapest larger
    batch, so it cannot make long drafts look hopeless forever (the table is cached)."""
    sizes = sorted(points)
    single = points[sizes[0]]
    cleaned = {n: max(single, min(points[n], n * single)) for n in sizes}
    cheapest_above = float("inf")
    for n in reversed(sizes):
        if cleaned[n] > _INVERSION_LIMIT * cheapest_above:
            cleaned[n] = cheapest_above
        cheapest_above = min(cheapest_above, cleaned[n])
    return cleaned


def _interpolate(points: dict[int, float], upto: int) -> list[float]:
    """Costs for every batch size 1..upto from the measured sizes (index 0 unused)."""
    points = _clean(points)
    sizes = sorted(points)
    out = [0.0]
    for n in range(1, upto + 1):
        lo = max(s for s in sizes if s <= n)
        hi = min((s for s in sizes if s >= n), default=lo)
        if hi == lo:
            out.append(points[lo])
        else:
            out.append(points[lo] + (points[hi] - points[lo]) * (n - lo) / (hi - lo))
    return out


def _measure(model: LoadedModel, sizes: tuple[int, ...], repeats: int = 3) -> list[float]:
    """Seconds to decode a batch of each size with logits for every row, after MEASURE_CONTEXT tokens: the fastest
    of a few tries, since anything else running on the machine only ever adds time. Tries go round the sizes, so a
    burst of load elsewhere spoils one try of several sizes rather than every try of one."""
    filler = model.tokenize(" the quick brown fox jumps over the lazy dog" * 8, add_special=False) or [0]
    context = min(MEASURE_CONTEXT, model.n_ctx - 2 * max(sizes))
    base_tokens = (filler * (MEASURE_CONTEXT // len(filler) + 1))[:max(context, 1)]
    model.truncate(0)
    model.decode(base_tokens)
    model.decode(base_tokens[:1], logit_rows=[0])  # warm-up: first decodes allocate
    points = {n: float("inf") for n in sizes}
    # The single token is every ratio's yardstick and cheap to time: it gets extra tries.
    plan = [n for _ in range(repeats) for n in sizes] + [sizes[0]] * (2 * repeats)
    for n in plan:
        model.truncate(len(base_tokens))
        start = time.perf_counter()
        model.decode((base_tokens * 2)[:n], logit_rows=range(n))
        points[n] = min(points[n], time.perf_counter() - start)
    model.truncate(0)
    return _interpolate(points, max(sizes))


def _key(model: LoadedModel, n_threads: int, gpu_layers: int, backends: str) -> str:
    import llama_cpp

    st = model.path.stat()
    # The devices are part of the key: a model with layers on a GPU must never be timed by its CPU costs.
    where = f"g{gpu_layers}@{backends}" if gpu_layers > 0 else "g0"  # "g0": what CPU runs were saved as before
    return f"{model.path.resolve()}|{st.st_size}|{st.st_mtime_ns}|t{n_threads}|{where}|{llama_cpp.__version__}"


def _cache_file() -> Path:
    return user_cache_dir() / "forward-costs.json"


def _read_cache() -> dict:
    try:
        data = json.loads(_cache_file().read_text())
        return data if data.get("version") == _CACHE_VERSION else {"version": _CACHE_VERSION}
    except (OSError, ValueError):
        return {"version": _CACHE_VERSION}


def _write_cache(data: dict) -> None:
    try:
        write_atomic(_cache_file(), json.dumps(data), durable=False)
    except OSError:
        pass  # a cache we cannot write only costs a re-measurement next time


def _keys(target: LoadedModel, draft: LoadedModel | None, n_threads: int, gpu_layers: tuple[int, int],
          backends: str):
    """Cache keys of the target and (None without one) the draft."""
    return (_key(target, n_threads, gpu_layers[0], backends),
            _key(draft, n_threads, gpu_layers[1], backends) if draft is not None else None)


def is_cached(target: LoadedModel, draft: LoadedModel | None, n_threads: int, gpu_layers: tuple[int, int],
              backends: str = "CPU") -> bool:
    """Whether measure_costs would only read the disk cache (so there is no need to tell anyone to wait)."""
    cache = _read_cache()
    return all(key in cache for key in _keys(target, draft, n_threads, gpu_layers, backends) if key is not None)


def measure_costs(target: LoadedModel, draft: LoadedModel | None, n_threads: int, gpu_layers: tuple[int, int],
                  backends: str = "CPU") -> CostTable:
    """The cost table for this pair, from the disk cache or measured now (seconds on a CPU, once per setup).

    `gpu_layers` are the layers offloaded (resolved, never Auto; 0 on a build without a GPU backend) and `backends`
    where they run ("CUDA", "Metal"): both are part of the cache key."""
    cache = _read_cache()
    tkey, dkey = _keys(target, draft, n_threads, gpu_layers, backends)
    if tkey not in cache:
        cache[tkey] = _measure(target, MEASURED_SIZES)
        _write_cache(cache)
    table = CostTable(batch=list(cache[tkey]), measured=MEASURED_SIZES)
    if draft is not None:
        if dkey not in cache:
            cache[dkey] = _measure(draft, (1,), repeats=5)
            _write_cache(cache)
        table.draft_per_token = cache[dkey][1]
    return table
