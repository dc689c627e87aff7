"""Defaults the stored settings and the engine share, so that storage need not import the engine: CPU threads
and the GPU-layers settings' special values."""

from __future__ import annotations

import os
import platform
import subprocess
from pathlib import Path
from typing import Optional

# Threads on Auto (the stored setting 0): the physical performance cores (`default_threads`), and fewer while
# another program keeps a core busy (app.engine.local.thread_governor).
THREADS_AUTO = 0
_SYS_CPU = Path("/sys/devices/system/cpu")


def default_threads() -> int:
    """The physical performance cores, as llama.cpp counts them for its own default (common/common.cpp,
    cpu_get_num_math): an SMT sibling shares its core's arithmetic units, so a second thread on it only adds a
    waiter at every barrier, and on a hybrid CPU a thread on an efficiency core holds the others back.
    SPECCHAT_THREADS overrides it (tests use one)."""
    try:
        return max(1, int(os.environ["SPECCHAT_THREADS"]))
    except (KeyError, ValueError):
        pass
    found = _performance_cores()
    return max(1, found if found else (os.cpu_count() or 1))


def resolve_threads(setting: int) -> int:
    """A stored threads setting as a count: Auto (0, or anything below 1) is `default_threads()`."""
    return setting if setting >= 1 else default_threads()


def logical_cpus() -> int:
    """CPUs this process may run on (its affinity where the OS tells it)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _performance_cores() -> Optional[int]:
    system = platform.system()
    if system == "Linux":
        return _linux_performance_cores(_SYS_CPU, Path("/sys/devices/cpu_core/cpus"))
    if system == "Darwin":
        # Apple silicon: perflevel0 is the performance cluster; Intel Macs only have hw.physicalcpu.
        for key in ("hw.perflevel0.physicalcpu", "hw.physicalcpu"):
            value = _sysctl(key)
            if value:
                return value
    return None  # elsewhere (Windows): logical CPUs, the old default


def _linux_performance_cores(sys_cpu: Path, core_pmu: Path) -> Optional[int]:
    """Distinct cores among the online CPUs (SMT siblings counted once); on a hybrid Intel CPU, whose kernel
    lists the performance cores' CPUs under /sys/devices/cpu_core, only those."""
    allowed = _parse_cpu_list(_read(sys_cpu / "online")) or set(range(os.cpu_count() or 1))
    performance = _parse_cpu_list(_read(core_pmu))
    if performance:
        allowed &= performance
    cores = set()
    for cpu in allowed:
        siblings = _read(sys_cpu / f"cpu{cpu}" / "topology" / "thread_siblings_list")
        if siblings is None:
            return None
        cores.add(siblings.strip())
    return len(cores) or None


def _parse_cpu_list(text: Optional[str]) -> set[int]:
    """ "0-3,8,10-11" -> {0, 1, 2, 3, 8, 10, 11}; empty for None or text that is not a CPU list."""
    cpus: set[int] = set()
    for part in (text or "").strip().split(","):
        if not part:
            continue
        low, _, high = part.partition("-")
        try:
            cpus.update(range(int(low), int(high or low) + 1))
        except ValueError:
            return set()
    return cpus


def _read(path: Path) -> Optional[str]:
    try:
        return path.read_text()
    except OSError:
        return None


def _sysctl(key: str) -> Optional[int]:
    try:
        out = subprocess.run(["sysctl", "-n", key], capture_output=True, text=True, timeout=5)
        return int(out.stdout.strip()) if out.returncode == 0 else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


# GPU layers: Auto offloads what fits in free device memory (app.engine.placement.gpu_fit); a number is used as it is.
GPU_LAYERS_AUTO = -1
# More layers than any model has: llama.cpp then offloads every layer and the output head.
GPU_LAYERS_ALL = 999


# Batch size on Auto (the stored setting 0): the tokens of a prompt one forward pass reads (`default_batch`).
BATCH_AUTO = 0


def default_batch() -> int:
    """The batch a prompt is read in when the setting is Auto: llama.cpp's own n_ubatch default. A larger batch
    reads a long prompt in fewer passes at the price of a larger compute buffer; a verify batch never comes near it."""
    return 512


def resolve_batch(setting: int) -> int:
    """A stored batch-size setting as a count: Auto (0, or anything below 1) is `default_batch()`."""
    return setting if setting >= 1 else default_batch()
