"""The target and draft models as loaded: where their layers run (GPU layers on Auto resolved, RPC workers), and the
CPU thread count that follows the machine's load.

Called from the engine process's main thread only, like the SpecEngine that owns it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Optional

from app.common.file_identity import file_identity
from app.engine.config import GPU_LAYERS_ALL, GPU_LAYERS_AUTO, LoadSettings
from app.engine.local.batch.sequences import kv_budget_line, kv_room_problem, memory_for_kv, parallel_sequences
from app.engine.errors import IncompatiblePairError, ModelLoadError
from app.engine.gguf.compat import compatibility
from app.engine.gguf.info import inspect_gguf
from app.engine.gguf.memory import capped_context
from app.engine.local.llama_model import LoadedModel
from app.engine.local.thread_governor import ThreadGovernor
from app.engine.placement import rpc
from app.engine.placement.gpu_fit import Placement, read_layout, resolve as resolve_placement
from app.platform.cpu_load import CpuLoad
from app.platform.machine_defaults import logical_cpus


def _tuning(s: LoadSettings) -> dict:
    """The load settings both models are made with, besides context, threads and devices."""
    return dict(n_batch=s.batch, flash_attn=s.flash_attn, kv_type=s.kv_type, mmap=s.mmap, mlock=s.mlock)


class ModelPair:
    """A target and, optionally, a draft that can speculate for it. Use from the engine process's main thread."""

    def __init__(self, load: LoadSettings):
        self.load_settings = load
        self.target: Optional[LoadedModel] = None
        self.draft: Optional[LoadedModel] = None
        # Where the loaded models' layers run, with GPU layers on Auto resolved (app.engine.placement.gpu_fit), and
        # the same in words for the window: what Auto chose and why, or that this build has no GPU backend.
        self.placement: Optional[Placement] = None
        self.placement_note = ""
        self._planned_draft: Optional[Path] = None
        self._draft_identity: Optional[list] = None  # the draft file's size and time when it loaded
        self.governor: Optional[ThreadGovernor] = None  # threads on Auto: the count that follows the load
        # Requests decoded side by side (app.engine.local.batch): the sequences both contexts hold, each up to
        # the setting's context (capped at the trained one), in one KV budget of `parallel` contexts. 1: one request at a time, with kept
        # conversation states (app.engine.local.kv_states), which restore into sequence 0 only.
        self.parallel = 1
        self.parallel_note = ""

    @property
    def target_path(self) -> Optional[Path]:
        return self.target.path if self.target else None

    @property
    def draft_path(self) -> Optional[Path]:
        return self.draft.path if self.draft else None

    @property
    def n_ctx(self) -> int:
        """The context one request has: the setting's, whatever the sequences side by side hold in all."""
        return self.target.n_ctx // self.parallel if self.target else self.load_settings.n_ctx

    def require_target(self) -> LoadedModel:
        if self.target is None:
            raise RuntimeError("no target model is loaded")
        return self.target

    def load_target(self, path: Path, planned_draft: str | Path | None = None) -> bool:
        """Load (or switch) the target; False when it is loaded already. A loaded draft that cannot draft for the
        new target is unloaded. `planned_draft`: the draft loaded next, so GPU layers on Auto leave room for it."""
        if self.target is not None and self.target.path == path:
            return False
        s = self.load_settings
        draft_path = self.draft.path if self.draft is not None else planned_draft
        parallel, parallel_note = self._plan_parallel(path, draft_path)  # raises before the loaded one goes
        self.close_target()
        self.parallel, self.parallel_note = parallel, parallel_note
        self.placement = resolve_placement(
            path,
            draft_path,
            s.n_ctx,
            s.target_gpu_layers,
            s.draft_gpu_layers,
            draft_resident=self.draft.n_gpu_layers if self.draft is not None else None,
            kv_type=s.kv_type,
            sequences=self.parallel,
        )
        self.placement_note = self.placement.explanation
        self._planned_draft = Path(planned_draft) if self.draft is None and planned_draft is not None else None
        target_devices, _draft_devices = self._devices()
        target_layers = self.placement.target_layers
        if s.rpc_servers:
            target_layers = GPU_LAYERS_ALL if s.target_gpu_layers == GPU_LAYERS_AUTO else s.target_gpu_layers
            self.placement = dataclasses.replace(self.placement, target_layers=target_layers)
            self.placement_note = (
                f"Target spread over RPC workers {', '.join(s.rpc_servers)} (by their free "
                f"memory); draft on this machine. {rpc.TRUSTED_NETWORK_ONLY}"
            )
        self.target = LoadedModel(
            path,
            n_ctx=s.n_ctx * self.parallel,
            n_threads=s.threads,
            n_gpu_layers=target_layers,
            devices=target_devices,
            n_seq_max=self.parallel,
            **_tuning(s),
        )
        self.governor = (
            ThreadGovernor(s.threads, self._set_threads, CpuLoad(), logical_cpus()) if s.adaptive_threads else None
        )
        if self.draft is not None and not self.compatible(self.draft.path)[0]:
            self.load_draft(None)
        return True

    def load_draft(self, path: str | Path | None) -> None:
        """Load, switch or (with None) unload the draft. Raises IncompatiblePairError for a mismatched vocabulary."""
        if path is None:
            if self.draft is not None:
                self.draft.close()
                self.draft = None
                if self.placement is not None:
                    self.placement = dataclasses.replace(self.placement, draft_layers=0)
            return
        path = Path(path)
        if self.draft is not None and self.draft.path == path:
            return
        if self.target is not None:
            compatible, reason = self.compatible(path)
            if not compatible:
                raise IncompatiblePairError(f"{path.name} cannot draft for {self.target.path.name}: {reason}")
        if self.draft is not None:
            self.draft.close()
            self.draft = None
        s = self.load_settings
        if self.target is not None and self.placement is not None and self._planned_draft == path:
            placement = self.placement  # room for this draft was kept when the target was placed
        elif self.target is not None:
            placement = resolve_placement(
                self.target.path,
                path,
                self.n_ctx,
                s.target_gpu_layers,
                s.draft_gpu_layers,
                target_resident=self.target.n_gpu_layers,
                kv_type=s.kv_type,
                sequences=self.parallel,
            )
        else:
            placement = resolve_placement(
                path, None, self.n_ctx, s.draft_gpu_layers, GPU_LAYERS_AUTO, kv_type=s.kv_type
            )
            placement = Placement(0, placement.target_layers, placement.explanation, placement.backends)
        self._planned_draft = None
        _target_devices, draft_devices = self._devices()
        parallel = self.parallel if self.target is not None else 1
        identity = file_identity(path)  # before reading it: a file still being written is told apart later
        self.draft = LoadedModel(
            path,
            n_ctx=self.n_ctx * parallel,
            n_threads=s.threads,
            n_gpu_layers=placement.draft_layers,
            devices=draft_devices,
            n_seq_max=parallel,
            **_tuning(s),
        )
        self._draft_identity = identity
        if self.target is not None and self.target.n_threads != s.threads:
            self.draft.set_threads(self.target.n_threads)  # the load's count now, as the governor chose it
        self.placement = placement
        if not s.rpc_servers:
            self.placement_note = placement.explanation

    def draft_file_change(self) -> str:
        """Why the loaded draft's file no longer is the file that loaded, in a sentence ("" while it is, or with no
        draft): gone (moved or deleted), or replaced (its size or modification time changed)."""
        if self.draft is None:
            return ""
        now = file_identity(self.draft.path)
        if now == self._draft_identity:
            return ""
        name = self.draft.path.name
        if now is None:
            return f"The draft file {name} is gone; drafting from earlier text until you choose another."
        return (
            f"The draft file {name} changed on disk; drafting from earlier text until you choose it again (or another)."
        )

    @property
    def note(self) -> str:
        """Where the models run and what they were loaded with, in words: with several requests at once, what their
        KV caches take."""
        return " ".join(part for part in (self.placement_note, self.load_note, self.parallel_note) if part)

    @property
    def load_note(self) -> str:
        """What the target was loaded with, in words ("" when none is loaded): batch, KV cache, flash attention,
        mmap and mlock."""
        model = self.target
        if model is None:
            return ""
        memory = ("locked in RAM" if model.mlock else "") if model.mmap else "read into RAM"
        if model.mmap and not model.mlock:
            memory = "mapped from the file"
        return f"Batch {model.n_batch}, KV cache {model.kv_type}, flash attention {model.flash_attn}, weights {memory}."

    def _plan_parallel(self, target: Path, draft: str | Path | None) -> tuple[int, str]:
        """How many requests the target about to load decodes side by side: the setting, or Auto from memory (the
        KV cache of one full context of the target and its draft per request), and what they take in words.
        Raises ModelLoadError with the numbers when the setting's requests cannot fit the memory free."""
        s = self.load_settings
        if s.n_parallel == 1:
            return 1, ""
        try:
            n_ctx = capped_context(s.n_ctx, inspect_gguf(target).context_length)
            per_sequence = sum(read_layout(target, n_ctx, s.kv_type).kv_bytes)
            if draft is not None:
                per_sequence += sum(read_layout(draft, n_ctx, s.kv_type).kv_bytes)
        except Exception:  # a header the reader cannot size: llama.cpp says what is wrong with it when it loads
            n_ctx, per_sequence = s.n_ctx, 0
        parallel = parallel_sequences(s.n_parallel, per_sequence)
        problem = kv_room_problem(parallel, per_sequence, n_ctx, memory_for_kv())
        if problem:
            raise ModelLoadError(problem)
        return parallel, kv_budget_line(parallel, per_sequence, n_ctx) + "." if parallel > 1 and per_sequence else ""

    def compatible(self, draft_path: Path) -> tuple[bool, str]:
        """Whether that draft can speculate for the loaded target, and why not."""
        result = compatibility(self.require_target().path, draft_path)
        return result.compatible, result.reason

    def close_target(self) -> None:
        if self.target is not None:
            self.target.close()
            self.target = None
            self.governor = None

    def unload(self) -> None:
        self.load_draft(None)
        self.close_target()

    def _set_threads(self, n_threads: int) -> None:
        for model in (self.target, self.draft):
            if model is not None:
                model.set_threads(n_threads)

    def _devices(self) -> tuple[Optional[tuple[int, ...]], Optional[tuple[int, ...]]]:
        """The devices the target and the draft may use: None (llama.cpp's own choice) until RPC workers are
        registered in this process; then explicitly the chosen workers plus local GPUs, and local GPUs only."""
        workers = rpc.register(self.load_settings.rpc_servers)
        if not rpc.any_registered():
            return None, None
        local = rpc.local_offload_devices()
        return workers + local, local
