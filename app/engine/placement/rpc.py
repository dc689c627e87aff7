"""llama.cpp RPC workers: one model's layers spread over `ggml-rpc-server` processes on other machines.

llama-cpp-python 0.3.x ignores `Llama(rpc_servers=...)`, so the workers are registered here the way llama.cpp's
own tools do (common/arg.cpp): the RPC backend's `ggml_backend_rpc_add_server`, found with
`ggml_backend_reg_by_name("RPC")` and `ggml_backend_reg_get_proc_address`, gives a backend registry per worker,
which `ggml_backend_register` adds to ggml's device list. A registered worker cannot be removed again, so once
any is registered every model is loaded with an explicit device list (llama_model_params.devices): the target
gets the chosen workers plus the local GPUs, the draft only the local GPUs (it runs every round, and a network
round trip per draft token would cost more than it saves).

RPC has no authentication and no encryption: a worker must only be reachable on a trusted network.
"""

from __future__ import annotations

import ctypes
import re
from typing import Sequence

from app.engine.errors import ModelLoadError
from app.engine.placement.ggml_library import backend_functions
from app.engine.placement.rpc_check import check_workers, unreachable

NO_RPC_BUILD = (
    "This llama.cpp build has no RPC backend: reinstall llama-cpp-python with "
    "CMAKE_ARGS=\"-DGGML_RPC=ON\" (see 'RPC workers' in docs/gpu-and-remote.md)."
)
TRUSTED_NETWORK_ONLY = "RPC has no authentication: use workers only on a trusted network."
_ENDPOINT = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+):(\d{1,5})$")

# endpoint -> its devices (ggml_backend_dev_t as ints); registered once per process, never removed.
_registered: dict[str, tuple[int, ...]] = {}


def parse_endpoints(text: str | Sequence[str]) -> tuple[str, ...]:
    """ "host:port[,host:port...]" (or a list) as a tuple; ValueError with one sentence for a bad entry."""
    items = text.split(",") if isinstance(text, str) else list(text)
    out: list[str] = []
    for item in (i.strip() for i in items):
        if not item:
            continue
        match = _ENDPOINT.match(item)
        if not match or not 0 < int(match.group(2)) < 65536:
            raise ValueError(f'"{item}" is not an RPC worker address; use HOST:PORT, e.g. 192.168.1.20:50052')
        if item not in out:
            out.append(item)
    return tuple(out)


def rpc_supported() -> bool:
    """Whether the installed llama.cpp was built with the RPC backend."""
    g = backend_functions()
    return bool(g.supports_rpc and g.supports_rpc() and g.reg_by_name and g.reg_by_name(b"RPC"))


def register(endpoints: Sequence[str]) -> tuple[int, ...]:
    """Register the workers (once each) and return their devices. ModelLoadError for a build without RPC or a
    worker that fails the child-process check (app.engine.placement.rpc_check)."""
    if not endpoints:
        return ()
    g = backend_functions()
    if not rpc_supported() or not (g.get_proc and g.register and g.reg_dev_count and g.reg_dev_get):
        raise ModelLoadError(NO_RPC_BUILD)
    add_server = None
    devices: list[int] = []
    # ggml aborts the whole process on a worker it cannot read and waits forever on a silent one: a child process
    # does what registering does first, with a timeout, so each of those is one sentence here.
    check_workers([e for e in endpoints if e not in _registered])
    for endpoint in endpoints:
        if endpoint not in _registered:
            if add_server is None:
                address = g.get_proc(g.reg_by_name(b"RPC"), b"ggml_backend_rpc_add_server")
                if not address:
                    raise ModelLoadError(NO_RPC_BUILD)
                add_server = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_char_p)(address)
            reg = add_server(endpoint.encode("utf-8"))
            if not reg:
                raise ModelLoadError(unreachable(endpoint))
            g.register(reg)
            _registered[endpoint] = tuple(g.reg_dev_get(reg, i) for i in range(g.reg_dev_count(reg)))
        devices.extend(_registered[endpoint])
    return tuple(devices)


def any_registered() -> bool:
    return bool(_registered)


def local_offload_devices() -> tuple[int, ...]:
    """The local GPUs llama.cpp would offload to by itself (discrete ones, else integrated), never RPC workers."""
    g = backend_functions()
    if not (g.dev_count and g.dev_get and g.dev_type and g.dev_reg and g.reg_name):
        return ()
    gpus: list[int] = []
    igpus: list[int] = []
    for i in range(g.dev_count()):
        dev = g.dev_get(i)
        reg = g.dev_reg(dev) if dev else None
        if not dev or (reg and (g.reg_name(reg) or b"") == b"RPC"):
            continue
        kind = g.dev_type(dev)
        (gpus if kind == 1 else igpus if kind == 2 else []).append(dev)
    return tuple(gpus or igpus)


def device_array(devices: Sequence[int]):
    """A NULL-terminated ggml_backend_dev_t array for llama_model_params.devices (keep it alive while loading)."""
    array = (ctypes.c_void_p * (len(devices) + 1))(*devices, None)
    return array
