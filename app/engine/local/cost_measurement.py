"""Measuring what forward passes cost, one forward pass at a time, so it fits into the moments nobody is waiting.

The engine process runs a step whenever it has nothing else to do (app.engine.host.worker): a request or a close
waits for at most the step in progress. Each step leaves the tokens a model holds for the chat as they were, so a
measurement between replies costs the next reply nothing: the batches are timed after the chat's own tokens (topped
up with filler text to MEASURE_CONTEXT), and the filler is dropped by the next prompt like any other divergence.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

from app.engine.local.cost_cache import cached_costs, model_key, store_measurement
from app.engine.local.llama_model import LoadedModel
from app.engine.speculation.costs import MEASURE_CONTEXT, MEASURED_SIZES, CostTable, interpolate

_FILLER = " the quick brown fox jumps over the lazy dog" * 8
_FILL_STEP = 64  # filler tokens decoded per step
BUSY_WAIT_S = 120.0  # measuring all at once waits this long at most for another program to end
BUSY_POLL_S = 0.25


class _ModelTiming:
    """Times one model's batches of `sizes`: the fastest of `repeats` tries each, since anything else running on
    the machine only ever adds time. Tries go round the sizes, so a burst of load elsewhere spoils one try of
    several sizes rather than every try of one. The single token is every ratio's yardstick and cheap to time: it
    gets extra tries."""

    def __init__(
        self, model: LoadedModel, gpu_layers: int, sizes: tuple[int, ...], repeats: int, busy: Callable[[], bool]
    ):
        self.model = model
        self._busy = busy
        self.gpu_layers = gpu_layers
        self.sizes = sizes
        self._plan = [n for _ in range(repeats) for n in sizes] + [sizes[0]] * (2 * repeats)
        self._points = {n: float("inf") for n in sizes}
        self._filler = model.tokenize(_FILLER, add_special=False) or [0]
        self._context: list[int] = []  # the tokens batches are timed after, as this timing left them
        self._chat_len = 0  # how many of them are the chat's own (the rest is filler)
        self._warm = False

    @property
    def done(self) -> bool:
        return not self._plan

    def batch(self) -> list[float]:
        """Seconds per batch size 1..max(sizes) (index 0 unused), once done."""
        return interpolate(self._points, max(self.sizes))

    def step(self) -> bool:
        """One forward pass of the measurement; False when it cannot run now (the chat leaves too little room)."""
        model = self.model
        biggest = max(self.sizes)
        if model.cached[: len(self._context)] != self._context or not self._context:
            # A reply ran since the last step (or none ran yet): time after what the model holds now.
            self._context = list(model.cached)
            self._chat_len = len(self._context)
        if len(self._context) + max(0, MEASURE_CONTEXT - len(self._context)) + biggest >= model.n_ctx:
            return False
        if len(self._context) < MEASURE_CONTEXT:
            fill = (self._filler * (_FILL_STEP // len(self._filler) + 1))[
                : min(_FILL_STEP, MEASURE_CONTEXT - len(self._context))
            ]
            model.truncate(len(self._context))
            model.decode(fill)
            self._context = list(model.cached)
            return True
        tokens = self._filler * (biggest // len(self._filler) + 1)
        if not self._warm:  # the first decodes after a load allocate: never timed
            model.truncate(len(self._context))
            model.decode(tokens[:biggest], logit_rows=range(biggest))
            model.truncate(len(self._context))
            self._warm = True
            return True
        n = self._plan[0]
        model.truncate(len(self._context))
        start = time.perf_counter()
        model.decode(tokens[:n], logit_rows=range(n))
        elapsed = time.perf_counter() - start
        model.truncate(len(self._context))
        if self._busy():
            # Another program took a CPU during it: not this machine's cost, and kept on disk it would mislead
            # every chat (a table timed that way promised a draft model 4x plain where it gave 0.6x).
            return True
        self._points[n] = min(self._points[n], elapsed)
        self._plan.pop(0)
        if not self._plan:
            model.truncate(self._chat_len)  # the filler goes; the chat's tokens stay
        return True


class CostMeasurement:
    """Measures the cost table of a target and (optionally) its draft model, a step at a time, and keeps it on
    disk when done. Use from the thread that runs the models."""

    def __init__(
        self,
        target: LoadedModel,
        draft: Optional[LoadedModel],
        n_threads: int,
        gpu_layers: tuple[int, int],
        backends: str = "CPU",
        busy: Callable[[], bool] = lambda: False,
    ):
        """`busy`: whether another program holds a CPU the models want now; a pass timed then is timed again."""
        self._args = (target, draft, n_threads, gpu_layers, backends)
        self._backends = backends
        self._n_threads = n_threads
        self._timings: list[_ModelTiming] = []
        self._results: dict[str, list[float]] = {}
        for model, layers, sizes, repeats in (
            (target, gpu_layers[0], MEASURED_SIZES, 3),
            (draft, gpu_layers[1], (1,), 5),
        ):
            if model is not None and cached_costs(model, None, n_threads, (layers, 0), backends) is None:
                self._timings.append(_ModelTiming(model, layers, sizes, repeats, busy))

    @property
    def done(self) -> bool:
        return not self._timings

    def step(self) -> bool:
        """One step; False when there is nothing to do now (done, or no room in the context until the chat
        changes)."""
        if not self._timings:
            return False
        timing = self._timings[0]
        if not timing.step():
            return False
        if timing.done:
            batch = timing.batch()
            self._results[model_key(timing.model, self._n_threads, timing.gpu_layers, self._backends)] = batch
            store_measurement(timing.model, self._n_threads, timing.gpu_layers, self._backends, batch)
            self._timings.pop(0)
        return True

    def table(self) -> Optional[CostTable]:
        """The measured table, once done (also when the disk cache could not be written)."""
        if self._timings:
            return None
        return cached_costs(*self._args, measured=self._results)


def measure_costs(
    target: LoadedModel,
    draft: Optional[LoadedModel],
    n_threads: int,
    gpu_layers: tuple[int, int],
    backends: str = "CPU",
    busy: Callable[[], bool] = lambda: False,
) -> CostTable:
    """The cost table, from the disk cache or measured now, all at once (benchmarks; the window never waits for
    this), waiting while another program is `busy`. Raises RuntimeError when the context is too small to time the
    largest batch, or when the machine stayed busy for BUSY_WAIT_S."""
    measurement = CostMeasurement(target, draft, n_threads, gpu_layers, backends, busy)
    waited = 0.0
    while not measurement.done:  # a table on disk needs nothing timed, busy or not
        if busy():
            if waited >= BUSY_WAIT_S:
                raise RuntimeError(
                    f"another program kept the CPU busy for {BUSY_WAIT_S:.0f} s, so forward-pass "
                    "costs were not measured: close it or wait until it ends, then run again"
                )
            time.sleep(BUSY_POLL_S)
            waited += BUSY_POLL_S
            continue
        if not measurement.step():
            break
    table = measurement.table()
    if table is None:
        raise RuntimeError(f"the context ({target.n_ctx} tokens) is too small to measure forward-pass costs")
    return table
