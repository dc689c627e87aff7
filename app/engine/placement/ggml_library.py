"""ggml's C functions, found on the libraries llama-cpp-python loaded, for asking its backend registry about devices
and RPC workers. One copy for devices.py, rpc.py and the RPC check's child process.
"""

from __future__ import annotations

import ctypes
from typing import Callable, Optional


def libraries() -> list[tuple[str, ctypes.CDLL]]:
    """llama.cpp's library first (on Linux and macOS its handle resolves ggml's symbols too), then the ggml
    libraries beside it, which Windows needs since there a DLL exports only its own functions."""
    libs: list[tuple[str, ctypes.CDLL]] = []
    try:
        from llama_cpp import llama_cpp as bindings

        libs.append(("llama", bindings._lib))
        from llama_cpp._ctypes_extensions import load_shared_library

        base = getattr(bindings, "_base_path", None)
    except Exception:  # an import that fails for any reason only leaves the devices unknown
        return libs
    if base is not None:
        for name in ("ggml", "ggml-base"):
            try:
                libs.append((name, load_shared_library(name, base)))
            except Exception:
                pass  # not every build splits ggml into these libraries
    return libs


def symbol(libs: list[tuple[str, ctypes.CDLL]], name: str, restype, argtypes: list) -> Optional[Callable]:
    """The first library's function of that name, declared with these types; None where no library exports it."""
    for _lib_name, lib in libs:
        try:
            fn = getattr(lib, name)
        except AttributeError:
            continue
        fn.restype = restype
        fn.argtypes = argtypes
        return fn
    return None


class BackendFunctions:
    """The backend registry's functions RPC workers need (each None where this build lacks it)."""

    def __init__(self):
        libs = libraries()
        vp, size_t = ctypes.c_void_p, ctypes.c_size_t
        self.supports_rpc = symbol(libs, "llama_supports_rpc", ctypes.c_bool, [])
        self.reg_by_name = symbol(libs, "ggml_backend_reg_by_name", vp, [ctypes.c_char_p])
        self.get_proc = symbol(libs, "ggml_backend_reg_get_proc_address", vp, [vp, ctypes.c_char_p])
        self.register = symbol(libs, "ggml_backend_register", None, [vp])
        self.reg_dev_count = symbol(libs, "ggml_backend_reg_dev_count", size_t, [vp])
        self.reg_dev_get = symbol(libs, "ggml_backend_reg_dev_get", vp, [vp, size_t])
        self.dev_count = symbol(libs, "ggml_backend_dev_count", size_t, [])
        self.dev_get = symbol(libs, "ggml_backend_dev_get", vp, [size_t])
        self.dev_type = symbol(libs, "ggml_backend_dev_type", ctypes.c_int, [vp])
        self.dev_reg = symbol(libs, "ggml_backend_dev_backend_reg", vp, [vp])
        self.reg_name = symbol(libs, "ggml_backend_reg_name", ctypes.c_char_p, [vp])


_functions: Optional[BackendFunctions] = None


def backend_functions() -> BackendFunctions:
    """The functions, declared once per process."""
    global _functions
    if _functions is None:
        _functions = BackendFunctions()
    return _functions
