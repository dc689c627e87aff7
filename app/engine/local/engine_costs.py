"""SpecEngine's forward-pass costs: measured all at once for benchmarks, in idle time for the window, forgotten when
the machine shows they were measured while another program held the CPU.

A part of SpecEngine (app.engine.local.engine), kept apart for size; it reads the engine's models, settings and
controllers and is called from the engine process's main thread only.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

from app.engine.speculation.controller import AutoController
from app.engine.speculation.cost_measurement import CostMeasurement, measure_costs
from app.engine.speculation.costs import CostTable, cached_costs, forget_measurement, prior_costs

if TYPE_CHECKING:
    from app.engine.config import LoadSettings
    from app.engine.local.llama_model import LoadedModel
    from app.engine.local.thread_governor import ThreadGovernor
    from app.engine.placement.gpu_fit import Placement
    from app.engine.speculation.policy import SpeculationPolicy


class EngineCosts:
    """Cost tables for SpecEngine's loaded models (a mixin: the attributes below are SpecEngine's)."""

    load_settings: LoadSettings
    target: Optional[LoadedModel]
    draft: Optional[LoadedModel]
    placement: Optional[Placement]
    governor: Optional[ThreadGovernor]
    _policies: dict[tuple, SpeculationPolicy]
    _measurement: Optional[CostMeasurement]

    @property
    def target_path(self) -> Optional[Path]:
        raise NotImplementedError

    @property
    def draft_path(self) -> Optional[Path]:
        raise NotImplementedError

    def _require_target(self) -> LoadedModel:
        raise NotImplementedError

    def measure_costs(self, with_draft: bool = True) -> CostTable:
        """What forward passes cost for the loaded models, measured now all at once unless on disk (benchmarks
        want a measured table; replies never wait for one, see idle_step)."""
        table = measure_costs(*self._cost_args(with_draft), busy=self._machine_busy)
        self._use_measured(table, with_draft)
        return table

    def costs_cached(self, with_draft: bool = True) -> bool:
        """Whether the costs of these models and settings were measured before (on disk)."""
        return cached_costs(*self._cost_args(with_draft)) is not None

    def idle_step(self) -> bool:
        """Do one short piece of background work (one forward pass of measuring the loaded models' costs);
        False when there is nothing to do now. Call between requests only."""
        if self.target is None:
            return False
        if self._machine_busy():
            # What it measured now would not be this machine's costs, and each step would hold up the next
            # request for as long as a pass takes with a thread that lost its core.
            return False
        if self._measurement is None:
            if self.costs_cached():
                return False
            self._measurement = CostMeasurement(*self._cost_args(True), busy=self._machine_busy)
        if self._measurement.step():
            return True
        table = self._measurement.table()
        if table is None:  # no room in the context now: try again after the next reply
            return False
        self._measurement = None
        self._use_measured(table, True)
        return False

    def _machine_busy(self) -> bool:
        return self.governor is not None and self.governor.machine_busy()

    def _use_measured(self, table: CostTable, with_draft: bool) -> None:
        """Controllers still running on the estimate switch to the measured table."""
        for (_, drafter, target, draft), policy in self._policies.items():
            if (isinstance(policy, AutoController) and policy.costs.estimated and target == self.target_path
                    and draft == self.draft_path and (with_draft or drafter != "model")):
                policy.use_costs(table)

    def _drop_stale_costs(self) -> None:
        """Single tokens beat the measured table by far: it was measured while another program held the CPU. It is
        forgotten (idle time measures it again) and controllers go back to the estimate until then."""
        forget_measurement(*self._cost_args(True))
        for (_, drafter, target, _draft), policy in self._policies.items():
            if isinstance(policy, AutoController) and not policy.costs.estimated and target == self.target_path:
                policy.use_costs(self._costs_now(with_draft=drafter == "model"))

    def _costs_now(self, with_draft: bool) -> CostTable:
        """The measured table when there is one, else the estimate to start from."""
        args = self._cost_args(with_draft)
        table = cached_costs(*args)
        if table is not None:
            return table
        target, draft = args[0], args[1]
        placement = self.placement
        on_gpu = (target.n_gpu_layers > 0 and placement is not None and placement.backends != "CPU"
                  and not self.load_settings.rpc_servers)
        return prior_costs(target.path.stat().st_size, draft.path.stat().st_size if draft is not None else None,
                           on_gpu)

    def _cost_args(self, with_draft: bool):
        s = self.load_settings
        target = self._require_target()
        draft = self.draft if with_draft else None
        layers = (target.n_gpu_layers, draft.n_gpu_layers if draft is not None else 0)
        backends = self.placement.backends if self.placement is not None else "CPU"
        if s.rpc_servers:
            backends += f"+RPC[{','.join(s.rpc_servers)}]"  # a spread target's costs are the network's too
        return target, draft, s.threads, layers, backends
