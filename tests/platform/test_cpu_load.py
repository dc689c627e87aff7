"""Other programs' CPU use, as the thread governor reads it before a reply: SpecChat's own server or window, which
hands the engine its request, is not another program (a fake /proc)."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from types import SimpleNamespace

from app.platform.cpu_load import CpuLoad

PARENT = 4242


def _process(proc: Path, pid: str, ticks: int, state: str) -> None:
    line = f"{pid} (python) {state} 1 1 1 0 -1 0 0 0 0 0 {ticks} 0 0 0 20 0 1 0\n"
    (proc / pid / "task" / "1").mkdir(parents=True, exist_ok=True)
    (proc / pid / "stat").write_text(line)
    (proc / pid / "task" / "1" / "stat").write_text(line)


def _machine(proc: Path, busy_ticks: int, running: int) -> None:
    (proc / "stat").write_text(f"cpu {busy_ticks} 0 0 1000 0 0 0 0 0 0\nprocs_running {running}\n")


def _fake_proc(tmp_path: Path, parent_ticks: int, busy_ticks: int) -> Path:
    proc = tmp_path / "proc"
    _process(proc, "self", 100, "R")
    _process(proc, str(PARENT), parent_ticks, "R")
    _machine(proc, busy_ticks, running=2)  # the engine's thread and its parent's
    return proc


def test_the_engines_parent_is_not_another_program(tmp_path, monkeypatch):
    """In the engine process (a multiprocessing child), the server that parsed and rendered the request a moment
    ago is SpecChat's own work: a reply's first pass keeps every core."""
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: SimpleNamespace(pid=PARENT))
    proc = _fake_proc(tmp_path, parent_ticks=0, busy_ticks=100)
    load = CpuLoad(proc)
    assert load.others_running() == 0
    monkeypatch.setattr("time.monotonic", lambda: 10.0**6)  # long after: the busy spell is measured at once
    _process(proc, str(PARENT), 50, "S")
    _machine(proc, 150, running=1)
    assert load.others_busy() == 0.0


def test_a_process_started_otherwise_counts_its_parent_as_another_program(tmp_path, monkeypatch):
    """A process that no SpecChat process started (the CLI from a shell) leaves its parent among the others."""
    monkeypatch.setattr(multiprocessing, "parent_process", lambda: None)
    proc = _fake_proc(tmp_path, parent_ticks=0, busy_ticks=100)
    assert CpuLoad(proc).others_running() == 1
