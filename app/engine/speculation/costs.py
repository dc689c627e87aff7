"""What a forward pass costs on this machine: the target's time for a batch of n tokens, the draft's per token.

The answer decides whether speculation can pay at all: on a 2-core CPU a verify batch of 9 costs ~4.4x one token, on
a GPU ~1x. It is measured once per (model file, threads, GPU layers and their backend, llama.cpp build) in idle time
(app.engine.local.cost_measurement) and cached on disk (app.engine.local.cost_cache); with threads on Auto, at the full count and only
while no other program is busy (app.engine.local.thread_governor). Until then a model runs on an estimate
(`prior_costs`) that the controller corrects from what its rounds cost, so choosing a model never waits for a
measurement.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

# Verify batches up to a draft of 63 (app.engine.config.MAX_DRAFT): long drafts are how copying text pays on a CPU,
# and a copy that has been right for a long match is drafted to the end of it at once.
MAX_BATCH = 64
# Sizes measured; the rest are interpolated, and the controller corrects each size it uses from what it observes.
# Measuring every size would take several times longer. Powers of two are in the set because CPU kernels work in
# blocks, so a power of two can cost less than the size below it (figures: docs/performance.md).
MEASURED_SIZES = (1, 2, 3, 4, 5, 6, 8, 12, 16, 24, 32, 48, 64)
# A measured size may cost this much more than a larger one (kernel block sizes make that real); beyond it, the
# measurement was disturbed by another process.
_INVERSION_LIMIT = 1.1
# Batches are timed after this many tokens of context, about a system prompt and a question: attention makes
# batches relatively dearer as the context grows (docs/performance.md).
MEASURE_CONTEXT = 256


@dataclass
class CostTable:
    """Seconds per forward pass. `batch[n]` is the target's cost for n tokens (index 0 unused)."""

    batch: list[float] = field(default_factory=list)
    draft_per_token: float = 0.0
    # The sizes that were measured, when the rest were interpolated (None: every entry was measured). Between
    # measured sizes the real cost can be well above the line (docs/performance.md), so only measured sizes are
    # chosen.
    measured: Optional[tuple[int, ...]] = None
    # An estimate made without timing anything (prior_costs): its absolute figures are placeholders until rounds
    # have been timed, and only its shape (a batch's cost against one token's) carries any knowledge.
    estimated: bool = False

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


def interpolate(points: dict[int, float], upto: int) -> list[float]:
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


# How a batch's cost grows against one token's before anything was timed, by where the model runs. The CPU shape is
# a quiet 2-core x86-64 machine's measurement of a 1.5B Q4_K_M model (docs/performance.md), rounded up a little: on
# a CPU a draft model rarely pays, and an estimate that is too hopeful would cost the first reply its speed. A GPU
# verifies a few tokens for about the price of one.
_PRIOR_SHAPE = {
    "cpu": {
        1: 1.0,
        2: 1.95,
        3: 2.75,
        4: 3.3,
        5: 4.6,
        6: 5.1,
        8: 6.0,
        12: 6.9,
        16: 7.5,
        24: 10.7,
        32: 12.0,
        48: 17.0,
        64: 22.0,
    },
    # A large model on a CPU: reading its weights, not arithmetic, sets the pace, so a batch shares the read. The
    # same machine's quiet measurement of the 1.5B model's F16 copy (3.6 GB; docs/performance.md): 2 tokens 1.68x,
    # 4 1.93x, 8 2.92x, 16 4.39x; the rest interpolated, rounded up.
    "cpu-memory-bound": {
        1: 1.0,
        2: 1.7,
        3: 1.85,
        4: 1.95,
        5: 2.2,
        6: 2.45,
        8: 2.95,
        12: 3.7,
        16: 4.4,
        24: 6.0,
        32: 7.5,
        48: 10.5,
        64: 13.5,
    },
    "gpu": {
        1: 1.0,
        2: 1.05,
        3: 1.1,
        4: 1.12,
        5: 1.15,
        6: 1.18,
        8: 1.22,
        12: 1.35,
        16: 1.45,
        24: 1.7,
        32: 1.95,
        48: 2.5,
        64: 3.0,
    },
}
# From this size a target on a CPU is taken as bound by memory until timed: a 16-bit copy of a 1.5B model (3.6 GB)
# is, as a 7B model quantized to 4 bits (about 4 GB) is on a laptop; the 1.5B at 4 bits (1.1 GB) is not.
MEMORY_BOUND_BYTES = 3_000_000_000
# A placeholder for one token's cost (seconds); the first rounds replace it (app.engine.speculation.online_costs.OnlineCosts).
_PRIOR_SINGLE_S = 0.05


def prior_costs(target_bytes: int, draft_bytes: Optional[int], on_gpu: bool) -> CostTable:
    """An estimate to start from before anything was timed. A decode step reads every weight once, so a draft
    model's cost per token is taken as the target's in proportion to file size."""
    kind = "gpu" if on_gpu else "cpu-memory-bound" if target_bytes >= MEMORY_BOUND_BYTES else "cpu"
    shape = _PRIOR_SHAPE[kind]
    points = {n: _PRIOR_SINGLE_S * r for n, r in shape.items()}
    table = CostTable(batch=interpolate(points, MAX_BATCH), measured=MEASURED_SIZES, estimated=True)
    if draft_bytes:
        table.draft_per_token = _PRIOR_SINGLE_S * min(1.0, draft_bytes / max(target_bytes, 1))
    return table
