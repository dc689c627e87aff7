"""The GUI overhead benchmark (python -m app.ui.devtools.bench_gui) on the synthetic models: both modes run the same
request, and the report has the medians, the window/engine ratio and the longest stall. No timing is asserted."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest


REPO_ROOT = Path(__file__).resolve().parents[3]


def _bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen"}
    return subprocess.run(
        [sys.executable, "-m", "app.ui.devtools.bench_gui", *args],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.slow
def test_both_modes_run_the_same_request_and_the_ratio_and_stall_are_reported(tiny_models, specchat_home):
    proc = _bench(
        "--target",
        str(tiny_models.target),
        "--draft",
        str(tiny_models.draft),
        "--draft-max",
        "4",
        "--max-tokens",
        "32",
        "--repeats",
        "2",
        "--json",
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)

    assert report["drafter"] == "model" and report["draft_max"] == "4" and report["repeats"] == 2
    for mode in ("engine", "window"):
        runs = report[mode]
        assert len(runs["runs_tokens_per_second"]) == 2
        assert all(tps > 0 for tps in runs["runs_tokens_per_second"])
        assert runs["tokens"] == [32, 32]
    assert report["engine"]["tokens"] == report["window"]["tokens"]
    assert report["same_tokens"] and report["same_text"]
    assert report["ratio"] > 0
    assert report["ratio"] == pytest.approx(
        report["window"]["tokens_per_second"] / report["engine"]["tokens_per_second"], abs=0.01
    )
    for mode in ("engine", "window"):  # the engine's is the baseline: the GUI idle while the engine decodes
        assert len(report[mode]["runs_longest_stall_ms"]) == len(report[mode]["runs_stall_phase"]) == 2
    assert report["longest_stall_ms"] == max(report["window"]["runs_longest_stall_ms"]) > 0
    assert report["baseline_stall_ms"] == max(report["engine"]["runs_longest_stall_ms"]) > 0
    assert set(report["window"]["runs_stall_phase"]) <= {"send", "streaming", "finish"}
    assert set(report["meets_targets"]) == {"ratio", "stall"}
    # The benchmark runs in a private home of its own: nothing lands in the one it was started with.
    assert not any(specchat_home.iterdir())


@pytest.mark.slow
def test_plain_decoding_summary_names_both_modes_ratio_and_stall(tiny_models):
    proc = _bench("--target", str(tiny_models.target), "--max-tokens", "16", "--repeats", "1", "--warmup", "0")
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "drafter none" in out
    assert "engine alone" in out and "window" in out
    assert "ratio window/engine" in out and "longest GUI stall" in out and "baseline" in out
    assert "same tokens in both modes: True" in out


def test_a_missing_model_is_refused_before_anything_starts(tmp_path):
    proc = _bench("--target", str(tmp_path / "absent.gguf"), timeout=60)
    assert proc.returncode == 2
    assert "no such file" in proc.stderr
