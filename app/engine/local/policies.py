"""Each chat's speculation policy for the loaded models, and the cost tables those policies decide by: measured all
at once for benchmarks, a forward pass at a time in idle time for the window, and forgotten when the machine shows
they were measured while another program held the CPU.

Called from the engine process's main thread only, like the SpecEngine that owns it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from app.engine.config import GenerationConfig
from app.engine.local.cost_cache import cached_costs, forget_measurement
from app.engine.local.cost_measurement import CostMeasurement, measure_costs
from app.engine.local.llama_model import LoadedModel
from app.engine.local.model_pair import ModelPair
from app.engine.speculation.auto_controller import AutoController
from app.engine.speculation.costs import CostTable, prior_costs
from app.engine.speculation.policy import FixedPolicy, PolicyState, SpeculationPolicy

# (session, whether the draft model may draft, target, draft): one controller each, so a chat's statistics are its
# own and a model switch starts afresh.
PolicyKey = tuple[str, bool, Optional[Path], Optional[Path]]


class Policies:
    """The policies of one engine's chats and their costs. Use from the engine process's main thread only."""

    def __init__(self, models: ModelPair):
        self._models = models
        self._policies: dict[PolicyKey, SpeculationPolicy] = {}
        self._measurement: Optional[CostMeasurement] = None  # measuring costs in idle time (idle_step)

    def for_request(self, config: GenerationConfig, session: str) -> SpeculationPolicy:
        """The policy a request drafts by: a fixed length, or the chat's controller for these models."""
        models = self._models
        drafter = config.drafter
        if drafter == "auto":
            drafter = "model" if models.draft is not None else "ngram"
        if drafter == "model" and models.draft is None:
            drafter = "ngram"
        if drafter == "history" and config.draft_max is None:
            drafter = "ngram"  # auto drafts from history beside n-gram lookup anyway
        if config.draft_max is not None:
            return FixedPolicy(config.draft_max, drafter)
        key = (session, drafter == "model", models.target_path, models.draft_path)
        if key not in self._policies:
            self._policies[key] = AutoController(
                self._costs_now(with_draft=drafter == "model"), with_model=drafter == "model"
            )
        return self._policies[key]

    def sessions(self) -> set[str]:
        """The chats that have a controller of their own."""
        return {key[0] for key in self._policies}

    def states(self) -> list[PolicyState]:
        """What each chat's controller decides by now, the oldest first (for debug views and tests)."""
        return [policy.describe() for policy in self._policies.values()]

    def models_changed(self) -> None:
        """A model was loaded or unloaded: a measurement in progress measured the pair it started with."""
        self._measurement = None

    def measure(self, with_draft: bool = True) -> CostTable:
        """What forward passes cost for the loaded models, measured now all at once unless on disk (benchmarks
        want a measured table; replies never wait for one, see idle_step)."""
        table = measure_costs(*self._cost_args(with_draft), busy=self._machine_busy)
        self._use_measured(table, with_draft)
        return table

    def cached(self, with_draft: bool = True) -> bool:
        """Whether the costs of these models and settings were measured before (on disk)."""
        return cached_costs(*self._cost_args(with_draft)) is not None

    def measuring(self) -> bool:
        """Whether idle_step has a measurement to work on: one in progress, or none on disk for these models."""
        return self._models.target is not None and (self._measurement is not None or not self.cached())

    def idle_step(self) -> bool:
        """One forward pass of measuring the loaded models' costs; False when there is nothing to do now."""
        if self._models.target is None:
            return False
        if self._machine_busy():
            # What it measured now would not be this machine's costs, and each step would hold up the next
            # request for as long as a pass takes with a thread that lost its core.
            return False
        if self._measurement is None:
            if self.cached():
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

    def after_round(self, policy: SpeculationPolicy) -> None:
        """After each round a policy drafted by: a table its rounds proved wrong is dropped."""
        if policy.wants_fresh_costs:
            self._drop_stale_costs()

    def _machine_busy(self) -> bool:
        governor = self._models.governor
        return governor is not None and governor.machine_busy()

    def _use_measured(self, table: CostTable, with_draft: bool) -> None:
        """Controllers still running on the estimate switch to the measured table."""
        models = self._models
        for (_, with_model, target, draft), policy in self._policies.items():
            if (
                policy.uses_costs
                and policy.describe().costs_estimated
                and target == models.target_path
                and draft == models.draft_path
                and (with_draft or not with_model)
            ):
                policy.use_costs(table)

    def _drop_stale_costs(self) -> None:
        """Single tokens beat the measured table by far: it was measured while another program held the CPU. It is
        forgotten (idle time measures it again) and controllers go back to the estimate until then."""
        forget_measurement(*self._cost_args(True))
        for (_, with_model, target, _draft), policy in self._policies.items():
            if policy.uses_costs and not policy.describe().costs_estimated and target == self._models.target_path:
                policy.use_costs(self._costs_now(with_draft=with_model))

    def _costs_now(self, with_draft: bool) -> CostTable:
        """The measured table when there is one, else the estimate to start from."""
        args = self._cost_args(with_draft)
        table = cached_costs(*args)
        if table is not None:
            return table
        target, draft = args[0], args[1]
        models = self._models
        placement = models.placement
        on_gpu = (
            target.n_gpu_layers > 0
            and placement is not None
            and placement.backends != "CPU"
            and not models.load_settings.rpc_servers
        )
        return prior_costs(target.path.stat().st_size, draft.path.stat().st_size if draft is not None else None, on_gpu)

    def _cost_args(self, with_draft: bool) -> tuple[LoadedModel, Optional[LoadedModel], int, tuple[int, int], str]:
        models = self._models
        s = models.load_settings
        target = models.require_target()
        draft = models.draft if with_draft else None
        layers = (target.n_gpu_layers, draft.n_gpu_layers if draft is not None else 0)
        backends = models.placement.backends if models.placement is not None else "CPU"
        if s.rpc_servers:
            backends += f"+RPC[{','.join(s.rpc_servers)}]"  # a spread target's costs are the network's too
        return target, draft, s.threads, layers, backends
