"""`specchat-cli bench --under-load`: the busy program runs in a session of its own and never outlives the run."""

from __future__ import annotations

import json
import os

import pytest

from app.bench.under_load import BusyProgram
from app.cli import main


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_the_busy_program_runs_in_its_own_session_and_is_stopped_on_an_error():
    with pytest.raises(RuntimeError):
        with BusyProgram() as busy:
            pid = busy.pid
            assert pid is not None
            assert _alive(pid)
            assert os.getsid(pid) == pid != os.getsid(0)  # setsid: its own session, as from another login
            raise RuntimeError("the benchmark failed midway")
    assert not _alive(pid)


@pytest.mark.slow
def test_under_load_runs_every_contender_quiet_and_busy_and_leaves_nothing_running(tiny_models, capsys, monkeypatch):
    monkeypatch.setenv("SPECCHAT_THREADS", "2")
    before = set(os.listdir("/proc"))
    code = main(
        [
            "bench",
            "--under-load",
            "--target",
            str(tiny_models.target),
            "--draft",
            str(tiny_models.draft_identical),
            "--repeats",
            "1",
            "--max-tokens",
            "8",
            "--ctx",
            "512",
            "--json",
            "--no-llama",
        ]
    )
    assert code == 0
    report = json.loads(capsys.readouterr().out)
    for condition in ("quiet", "busy"):
        assert set(report["median"][condition]) == {
            "ours auto threads",
            "ours 1 thread",
            "ours 2 threads",
            "ours speculative",
        }
        assert all(v > 0 for v in report["median"][condition].values())
    assert "busy: ours auto / ours best fixed" in report["ratios"]
    # Neither read nor written: the user's history of earlier replies (each repetition would copy the last).
    from app.engine.speculation.history_file import HistoryFile

    assert HistoryFile().ids() == {}
    leftover = [pid for pid in set(os.listdir("/proc")) - before if pid.isdigit() and _is_busy_loop(pid)]
    assert leftover == []


def _is_busy_loop(pid: str) -> bool:
    """A busy program this test process started (its parent): another suite on the same machine, run side by side,
    starts busy programs of its own, which are not this test's leftovers."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"while 1: pass" not in handle.read():
                return False
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            parent = next((line.split()[1] for line in handle if line.startswith("PPid:")), "")
        return parent == str(os.getpid())
    except OSError:
        return False
