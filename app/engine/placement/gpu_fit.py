"""How many layers of the target and the draft go to the GPU when GPU layers are on Auto.

Everything that fits in the free device memory, with a margin, is offloaded. Sizes come from the GGUF's tensor
infos (blk.N.* is layer N) plus the KV cache each layer holds at the chosen context and KV-cache type
(app.engine.gguf.memory). The draft is placed first: it runs every round, so a draft on the CPU slows every round,
while a partly offloaded target still verifies a whole batch in one pass. A number the user set is kept as it is (it overrides Auto) and its size
is counted before Auto's model is fitted.

llama.cpp offloads the last N repeating layers for n_gpu_layers = N, and the output head too for N > n_layer, so
"all layers" is n_layer + 1 here. The token embeddings always stay in host memory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Optional

from app.engine.config import GPU_LAYERS_AUTO, KvType
from app.engine.placement import devices
from app.engine.placement.devices import NO_GPU_BUILD, SEE_GPU_DOCS, DeviceReport
from app.engine.gguf.info import inspect_gguf, read_tensor_sizes
from app.engine.gguf.memory import capped_context, kv_bytes, kv_values_per_token, metadata_count

_LAYER = re.compile(r"^blk\.(\d+)\.")
# Kept free on the device besides the weights and the KV cache: each model's compute buffers for a 512-token
# batch, and a share of the free memory for the desktop, other programs and the driver's own allocations.
COMPUTE_RESERVE_BYTES = 384 * 1024**2
FREE_MARGIN = 0.05


@dataclass(frozen=True)
class ModelLayout:
    """What offloading one model costs in device memory, in bytes."""

    name: str
    layer_bytes: tuple[int, ...]  # weights of blk.0 .. blk.{n_layer-1}
    output_bytes: int  # the output head and its norm, offloaded with "layer n_layer + 1"
    kv_bytes: tuple[int, ...]  # KV cache of each layer at the chosen context, every sequence's together

    @property
    def n_layer(self) -> int:
        return len(self.layer_bytes)

    @property
    def all_layers(self) -> int:
        return self.n_layer + 1

    def cost(self, n_gpu_layers: int) -> int:
        """Device bytes for n_gpu_layers offloaded (0: none, n_layer + 1 or more: everything)."""
        n = max(0, min(n_gpu_layers, self.all_layers))
        if n == 0:
            return 0
        first = self.n_layer - min(n, self.n_layer)
        layers = sum(self.layer_bytes[first:]) + sum(self.kv_bytes[first:])
        return layers + (self.output_bytes if n > self.n_layer else 0) + COMPUTE_RESERVE_BYTES

    def most_that_fit(self, budget: int) -> int:
        """The most layers whose cost fits `budget` (0 when not even one does)."""
        for n in range(self.all_layers, 0, -1):
            if self.cost(n) <= budget:
                return n
        return 0


@dataclass(frozen=True)
class Placement:
    """GPU layers resolved for llama.cpp, and the reason in words for the window."""

    target_layers: int
    draft_layers: int
    explanation: str
    backends: str = "CPU"  # where offloaded layers run ("CUDA", "Metal"), "CPU" when none are offloaded


def layout_from_tensors(
    name: str, tensors: Iterable[tuple[str, int]], metadata: dict, n_ctx: int, kv_type: KvType = "f16"
) -> ModelLayout:
    """A model's layout from its tensor sizes and metadata. Pure: tests feed it made-up models."""
    tensors = list(tensors)
    arch = metadata.get("general.architecture", "")
    layer_sizes: dict[int, int] = {}
    output = 0
    for tensor, nbytes in tensors:
        match = _LAYER.match(tensor)
        if match:
            layer_sizes[int(match[1])] = layer_sizes.get(int(match[1]), 0) + nbytes
        elif tensor.startswith("output"):
            output += nbytes
        elif tensor == "token_embd.weight" and not any(t == "output.weight" for t, _ in tensors):
            output += nbytes  # tied embeddings: llama.cpp copies them to the output head's device
    n_layer = metadata_count(metadata.get(f"{arch}.block_count")) or (max(layer_sizes) + 1 if layer_sizes else 0)
    kv = [kv_bytes(values, n_ctx, kv_type) for values in kv_values_per_token(metadata, n_layer)]
    return ModelLayout(
        name=name,
        layer_bytes=tuple(layer_sizes.get(i, 0) for i in range(n_layer)),
        output_bytes=output,
        kv_bytes=tuple(kv),
    )


def read_layout(path: str | Path, n_ctx: int, kv_type: KvType = "f16", sequences: int = 1) -> ModelLayout:
    """The layout of a GGUF file with `sequences` contexts of n_ctx each (capped at what the model was trained for,
    as llama.cpp does). Raises ModelFileError for an unreadable file."""
    info = inspect_gguf(path)
    n_ctx = capped_context(n_ctx, info.context_length) * max(1, sequences)
    return layout_from_tensors(Path(path).name, read_tensor_sizes(path), info.metadata, n_ctx, kv_type)


def cpu_only_notice(target_request: int, draft_request: int) -> str:
    """What to say when GPU layers were set to a number but the build has no GPU backend ("" when not)."""
    asked = [n for n in (target_request, draft_request) if n != GPU_LAYERS_AUTO and n > 0]
    if not asked:
        return ""
    return (
        f"GPU layers set to {max(asked)}, but this build of llama.cpp has no GPU backend: "
        f"the models run on the CPU. {SEE_GPU_DOCS[0].upper()}{SEE_GPU_DOCS[1:]}."
    )


def _phrase(n: int, layout: ModelLayout, role: str) -> str:
    if n >= layout.all_layers:
        return f"all {layout.n_layer} layers of the {role}"
    if n == 0:
        return f"none of the {role}"
    return f"{min(n, layout.n_layer)} of {layout.n_layer} layers of the {role}"


def place(
    target: ModelLayout,
    draft: Optional[ModelLayout],
    report: DeviceReport,
    target_request: int = GPU_LAYERS_AUTO,
    draft_request: int = GPU_LAYERS_AUTO,
    *,
    target_resident: Optional[int] = None,
    draft_resident: Optional[int] = None,
) -> Placement:
    """Resolve Auto (GPU_LAYERS_AUTO) requests to layer counts for these devices; numbers set by the user are kept.
    A model already loaded keeps its layers (`*_resident`): the free memory reported already leaves it out.
    Without a draft, draft_layers is 0."""
    t_auto = target_request == GPU_LAYERS_AUTO and target_resident is None
    d_auto = draft is not None and draft_request == GPU_LAYERS_AUTO and draft_resident is None
    t = target_resident if target_resident is not None else (0 if t_auto else target_request)
    d = 0 if draft is None else draft_resident if draft_resident is not None else (0 if d_auto else draft_request)
    if not report.known:
        return Placement(
            t,
            d,
            f"GPU layers: Auto runs on the CPU because the devices are unknown "
            f"({report.problem}); set a number of GPU layers in Settings to offload.",
        )
    if report.cpu_only:
        notice = cpu_only_notice(target_request, draft_request if draft is not None else GPU_LAYERS_AUTO)
        return Placement(0, 0, notice or f"{NO_GPU_BUILD} - {SEE_GPU_DOCS}.")
    devices = report.offload_devices
    budget = int(sum(dev.free_bytes for dev in devices) * (1 - FREE_MARGIN))
    # Numbers the user set take their room first; then the draft, then the target.
    if not t_auto and target_resident is None:
        budget -= target.cost(t)
    if draft is not None and not d_auto and draft_resident is None:
        budget -= draft.cost(d)
    if d_auto and draft is not None:
        d = draft.most_that_fit(budget)
        budget -= draft.cost(d)
    if t_auto:
        t = target.most_that_fit(budget)
    where = " and ".join(dev.label for dev in devices)
    set_by_user = [
        role
        for role, fixed in (
            ("target", target_request != GPU_LAYERS_AUTO),
            ("draft", draft is not None and draft_request != GPU_LAYERS_AUTO),
        )
        if fixed
    ]
    backends = report.backends if t or d else "CPU"
    return Placement(t, d, _explain(target, draft, t, d, set_by_user, where), backends)


def _explain(
    target: ModelLayout, draft: Optional[ModelLayout], t: int, d: int, set_by_user: list[str], where: str
) -> str:
    t_all = t >= target.all_layers
    d_all = draft is None or d >= draft.all_layers
    if t_all and d_all:
        text = f"All {target.n_layer} layers of the target" + (" and the draft" if draft is not None else "")
        text += f" on {where}"
    elif t == 0 and d == 0:
        text = f"CPU only: not even one layer fits in the memory free on {where}"
    else:
        parts = ([_phrase(d, draft, "draft")] if draft is not None else []) + [_phrase(t, target, "target")]
        text = f"{', '.join(parts)} on {where}; the rest on the CPU"
        text = text[0].upper() + text[1:]
    if set_by_user:
        text += f" ({' and '.join(set_by_user)} as set in Settings)"
    return text + "."


def resolve(
    target_path: str | Path,
    draft_path: str | Path | None,
    n_ctx: int,
    target_request: int,
    draft_request: int,
    *,
    target_resident: Optional[int] = None,
    draft_resident: Optional[int] = None,
    report: Optional[DeviceReport] = None,
    kv_type: KvType = "f16",
    sequences: int = 1,
) -> Placement:
    """place() for model files: lists the devices (unless given) and reads both files' layouts, with the KV cache of
    `sequences` requests side by side, n_ctx each. Never raises: a file that cannot be sized leaves Auto on the CPU
    (llama.cpp will report what is wrong with it when it loads)."""
    report = report if report is not None else devices.list_devices()
    try:
        target = read_layout(target_path, n_ctx, kv_type, sequences)
        draft = read_layout(draft_path, n_ctx, kv_type, sequences) if draft_path is not None else None
    except Exception as exc:  # any reader failure only costs the automatic choice
        t = target_resident if target_resident is not None else max(target_request, 0)
        d = draft_resident if draft_resident is not None else max(draft_request, 0)
        return Placement(
            t,
            d if draft_path is not None else 0,
            f"GPU layers: Auto runs on the CPU because the model's size could not be read ({exc}).",
        )
    return place(
        target,
        draft,
        report,
        target_request,
        draft_request,
        target_resident=target_resident,
        draft_resident=draft_resident,
    )
