"""The default thread count: physical performance cores, as llama.cpp counts them."""

from __future__ import annotations

from pathlib import Path

from app.platform.machine_defaults import _linux_performance_cores, resolve_threads


def _sysfs(root: Path, siblings: dict[int, str], online: str, performance: str | None = None) -> tuple[Path, Path]:
    cpu = root / "cpu"
    for n, text in siblings.items():
        (cpu / f"cpu{n}" / "topology").mkdir(parents=True)
        (cpu / f"cpu{n}" / "topology" / "thread_siblings_list").write_text(text + "\n")
    (cpu / "online").write_text(online + "\n")
    pmu = root / "cpu_core" / "cpus"
    if performance is not None:
        pmu.parent.mkdir()
        pmu.write_text(performance + "\n")
    return cpu, pmu


def test_smt_siblings_count_once(tmp_path):
    # 4 cores with 2 threads each, numbered as Linux numbers them on most x86 machines.
    cpu, pmu = _sysfs(tmp_path, {n: f"{n % 4},{n % 4 + 4}" for n in range(8)}, "0-7")
    assert _linux_performance_cores(cpu, pmu) == 4


def test_a_hybrid_cpu_counts_its_performance_cores_only(tmp_path):
    # 2 performance cores with SMT (CPUs 0-3) and 4 efficiency cores (CPUs 4-7).
    siblings = {0: "0-1", 1: "0-1", 2: "2-3", 3: "2-3", 4: "4", 5: "5", 6: "6", 7: "7"}
    cpu, pmu = _sysfs(tmp_path, siblings, "0-7", performance="0-3")
    assert _linux_performance_cores(cpu, pmu) == 2


def test_auto_resolves_to_the_default_and_a_number_stays(monkeypatch):
    monkeypatch.setenv("SPECCHAT_THREADS", "3")
    assert resolve_threads(0) == 3 and resolve_threads(5) == 5
