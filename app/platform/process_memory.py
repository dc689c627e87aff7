"""A process's resident memory, from /proc (Linux; elsewhere 0.0), for the benchmarks that report it. No Qt."""

from __future__ import annotations

from pathlib import Path


def rss_mib(pid: int | str = "self") -> float:
    """The resident set size of process `pid` (this one by default) in MiB, from /proc; 0.0 where it cannot be read
    (a process that has ended, a system without /proc)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii", errors="replace").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0
