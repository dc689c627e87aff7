"""The compute devices this build of llama.cpp can use, asked of its backend registry through ctypes.

llama-cpp-python binds llama_supports_gpu_offload and llama_supports_rpc but none of ggml's device functions, so
those are declared on the shared libraries it loaded (ggml_library.py). A build with the RPC backend answers
llama_supports_gpu_offload() with True even without any GPU, so whether there is a GPU is decided from the device
list, never from that flag. Nothing here raises: a missing symbol or library leaves the list unknown, with a reason.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass, field
from typing import Literal, Optional

from app.common.units import format_bytes
from app.engine.placement.ggml_library import libraries, symbol

DeviceKind = Literal["cpu", "gpu", "igpu", "accel", "unknown"]
# enum ggml_backend_dev_type (ggml/include/ggml-backend.h); META wraps other devices and holds no memory of its own.
_KINDS: dict[int, DeviceKind] = {0: "cpu", 1: "gpu", 2: "igpu", 3: "accel"}
GIB = 1024**3
NO_GPU_BUILD = "CPU only: this build of llama.cpp has no GPU backend"
SEE_GPU_DOCS = "see 'GPU builds' in docs/gpu-and-remote.md"


@dataclass(frozen=True)
class Device:
    """One backend device. Memory is in bytes; for the CPU it is the machine's RAM."""

    name: str  # "CUDA0", "Metal", "CPU"
    description: str  # "NVIDIA GeForce RTX 4090"
    kind: DeviceKind
    free_bytes: int
    total_bytes: int
    backend: str  # the backend's registry name: "CUDA", "Metal", "Vulkan", "ROCm", "CPU", "RPC"

    @property
    def label(self) -> str:
        """How a person reads it: "NVIDIA GeForce RTX 4090 (CUDA), 23.7 GB free"."""
        what = self.description or self.name
        return f"{what} ({self.backend}), {format_bytes(self.free_bytes)} free"


@dataclass(frozen=True)
class DeviceReport:
    """What the build offers. `problem` is "" when the devices could be listed, else why not (they are unknown)."""

    devices: tuple[Device, ...] = ()
    rpc: Optional[bool] = None  # None: unknown
    problem: str = ""
    sources: tuple[str, ...] = field(default=(), compare=False)

    @property
    def known(self) -> bool:
        return not self.problem

    @property
    def offload_devices(self) -> tuple[Device, ...]:
        """Where llama.cpp puts offloaded layers: the discrete GPUs, or the integrated ones when there are none.
        RPC workers are not counted: they hold the target only when the user lists them (app.engine.placement.rpc)."""
        gpus = tuple(d for d in self.devices if d.kind == "gpu" and d.backend != "RPC")
        return gpus or tuple(d for d in self.devices if d.kind == "igpu")

    @property
    def cpu_only(self) -> bool:
        return self.known and not self.offload_devices

    @property
    def backends(self) -> str:
        """The offload backends' names joined ("CUDA", "Metal"), or "CPU"."""
        names = sorted({d.backend for d in self.offload_devices})
        return "+".join(names) or "CPU"

    def lines(self) -> list[str]:
        """The devices as lines for a person, the CPU-only notice or why the devices are unknown."""
        if not self.known:
            return [f"Devices unknown: {self.problem}"]
        out = [d.label for d in self.offload_devices]
        if not out:
            out.append(f"{NO_GPU_BUILD} - {SEE_GPU_DOCS}")
        return out


def _text(raw: Optional[bytes]) -> str:
    return raw.decode("utf-8", errors="replace") if raw else ""


def build_features() -> str:
    """The CPU features this llama.cpp build was compiled for ("AVX2 = 1 | FMA = 1 | ..."), for reports; never
    raises."""
    try:
        import llama_cpp

        return _text(llama_cpp.llama_print_system_info()).strip().removeprefix("CPU :").strip(" |")
    except Exception as exc:  # information only
        return f"unknown ({exc})"


def list_devices() -> DeviceReport:
    """The devices of the loaded llama.cpp build, with their free memory now. Never raises."""
    try:
        return _list_devices(libraries())
    except Exception as exc:  # a device list is information; failing to get it must not stop the app
        return DeviceReport(problem=f"listing llama.cpp's devices failed ({exc})")


def _list_devices(libs: list[tuple[str, ctypes.CDLL]]) -> DeviceReport:
    if not libs:
        return DeviceReport(problem="llama-cpp-python's library could not be loaded")
    vp, size_t = ctypes.c_void_p, ctypes.c_size_t
    rpc_fn = symbol(libs, "llama_supports_rpc", ctypes.c_bool, [])
    rpc = bool(rpc_fn()) if rpc_fn else None
    fns = {
        "count": symbol(libs, "ggml_backend_dev_count", size_t, []),
        "get": symbol(libs, "ggml_backend_dev_get", vp, [size_t]),
        "name": symbol(libs, "ggml_backend_dev_name", ctypes.c_char_p, [vp]),
        "description": symbol(libs, "ggml_backend_dev_description", ctypes.c_char_p, [vp]),
        "type": symbol(libs, "ggml_backend_dev_type", ctypes.c_int, [vp]),
        "memory": symbol(libs, "ggml_backend_dev_memory", None, [vp, ctypes.POINTER(size_t), ctypes.POINTER(size_t)]),
        "reg": symbol(libs, "ggml_backend_dev_backend_reg", vp, [vp]),
        "reg_name": symbol(libs, "ggml_backend_reg_name", ctypes.c_char_p, [vp]),
    }
    found = {name: fn for name, fn in fns.items() if fn is not None}
    missing = [name for name in ("count", "get", "name", "type", "memory") if name not in found]
    sources = tuple(name for name, _lib in libs)
    if missing:
        symbols = ", ".join(f"ggml_backend_dev_{m}" for m in missing)
        return DeviceReport(rpc=rpc, problem=f"this llama.cpp build does not export {symbols}", sources=sources)
    devices = []
    for i in range(found["count"]()):
        dev = found["get"](i)
        if not dev:
            continue
        free, total = size_t(0), size_t(0)
        found["memory"](dev, ctypes.byref(free), ctypes.byref(total))
        backend = ""
        if "reg" in found and "reg_name" in found:
            reg = found["reg"](dev)
            backend = _text(found["reg_name"](reg)) if reg else ""
        name = _text(found["name"](dev))
        description = _text(found["description"](dev)) if "description" in found else ""
        devices.append(
            Device(
                name=name,
                description=description,
                kind=_KINDS.get(found["type"](dev), "unknown"),
                free_bytes=free.value,
                total_bytes=total.value,
                backend=backend or name,
            )
        )
    return DeviceReport(devices=tuple(devices), rpc=rpc, sources=sources)
