"""`specchat-cli bench --agents`: how to run it, and a clear sentence (no traceback) when its models are absent."""

from __future__ import annotations

import pytest

from app.cli import main


def test_bench_agents_is_in_the_help(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["bench", "--help"])
    assert exited.value.code == 0
    assert "--agents" in capsys.readouterr().out


def test_bench_agents_without_its_model_says_so_in_one_line(tmp_path, capsys):
    missing = tmp_path / "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
    assert main(["bench", "--agents", "--target", str(missing)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and missing.name in err and "Traceback" not in err


def test_our_server_runs_with_a_home_of_its_own_so_no_saved_state_is_found(specchat_home):
    """A conversation state saved by an earlier run would answer the session's first request from disk: ours is
    started with a fresh SPECCHAT_HOME, removed once it stops."""
    import sys
    from pathlib import Path

    from app.bench.agents import _running

    said = "import os, sys; print(os.environ['SPECCHAT_HOME'], file=sys.stderr, flush=True)"
    with _running([sys.executable, "-c", said], None) as lines:
        home = Path(lines.get(timeout=60).strip())
        assert home.is_dir() and home != specchat_home
        assert not (home / "data" / "conversation-states").exists()
    assert not home.exists()
