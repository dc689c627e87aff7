"""How much of the CPU other programs take right now, from /proc (Linux; elsewhere nothing is known). No Qt.

Programs at a lower priority (nice > 0) are left out: the kernel gives their time to us when we want it, so
they slow us down little (issue 21's measurements).
"""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path
from typing import Optional

_PROC = Path("/proc")
RUNNING_SAMPLES = 3


class CpuLoad:
    """Samples other programs' CPU use. Any one thread at a time."""

    def __init__(self, proc: Path = _PROC):
        self._proc = proc
        self._ticks = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
        self._last = self._sample()

    @property
    def available(self) -> bool:
        return self._last is not None

    def others_busy(self, within_s: Optional[float] = None) -> Optional[float]:
        """CPUs' worth of time other programs used since the last call (0.0 to the CPU count), or None when
        unknown or when less than 50 ms passed (a tick is 10 ms: too coarse for less). With `within_s`, also None
        when the last call is older than that: an average over a longer time says little about now (and the next
        call measures from this one)."""
        now = self._sample()
        last = self._last
        if now is None or last is None:
            return None
        wall = now[0] - last[0]
        if wall < 0.05:
            return None
        self._last = now
        if within_s is not None and wall > within_s:
            return None
        return self._busy_between(last, now)

    def others_busy_now(self, seconds: float = 0.08) -> Optional[float]:
        """CPUs' worth of time other programs use over the next `seconds` (this call waits that long), or None
        when unknown: what they want now, where others_busy tells what they used since the last look."""
        first = self._sample()
        time.sleep(seconds)
        now = self._sample()
        if first is None or now is None:
            return None
        self._last = now
        return self._busy_between(first, now)

    def _busy_between(self, last: tuple[float, int, int], now: tuple[float, int, int]) -> float:
        busy = (now[1] - last[1]) - (now[2] - last[2])
        return max(0.0, busy / self._ticks / (now[0] - last[0]))

    def others_running(self) -> Optional[int]:
        """Runnable tasks that are not our own processes' (_own_pids), the median of RUNNING_SAMPLES looks a millisecond apart:
        a program that keeps a core busy is runnable at each, a task that ran for an instant (a shell command, a
        timer) at one at most. None when unknown."""
        counts = []
        for index in range(RUNNING_SAMPLES):
            if index:
                time.sleep(0.001)
            count = self._running_now()
            if count is None:
                return None
            counts.append(count)
        return sorted(counts)[len(counts) // 2]

    def _running_now(self) -> Optional[int]:
        try:
            running = next(
                int(line.split()[1])
                for line in (self._proc / "stat").read_text().splitlines()
                if line.startswith("procs_running")
            )
        except (OSError, StopIteration, ValueError, IndexError):
            return None
        own = 0
        for pid in self._own_pids():
            try:
                tasks = list((self._proc / pid / "task").iterdir())
            except OSError:
                if pid == "self":
                    return None
                continue  # the parent is gone
            for task in tasks:
                try:
                    stat = (task / "stat").read_text()
                except OSError:
                    continue
                own += stat[stat.rfind(")") + 2 :].startswith("R")
        return max(0, running - max(own, 1))

    def _sample(self) -> Optional[tuple[float, int, int]]:
        """(monotonic seconds, busy ticks of every CPU but niced time, our own processes' ticks)."""
        try:
            fields = (self._proc / "stat").read_text().split("\n", 1)[0].split()
            # cpu user nice system idle iowait irq softirq steal ...
            user, _nice, system, _idle, _iowait, irq, softirq, steal = (int(v) for v in fields[1:9])
            own = sum(self._ticks_of(pid) for pid in self._own_pids())
        except (OSError, ValueError, IndexError):
            return None
        return time.monotonic(), user + system + irq + softirq + steal, own

    def _own_pids(self) -> list[str]:
        """This process, and the one that started it when this one is its multiprocessing child (the engine
        process under serve's server or the window): the parent reads and renders each request just before the
        engine reads it, so its time is the request's own, not another program's wanting a core."""
        parent = multiprocessing.parent_process()
        return ["self"] if parent is None or parent.pid is None else ["self", str(parent.pid)]

    def _ticks_of(self, pid: str) -> int:
        """A process's user and system ticks (fields 14 and 15 of proc(5))."""
        stat = (self._proc / pid / "stat").read_text()
        after_name = stat[stat.rfind(")") + 2 :].split()
        return int(after_name[11]) + int(after_name[12])
