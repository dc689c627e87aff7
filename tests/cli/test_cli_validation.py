"""`specchat-cli` run as a separate process on damaged models and bad settings: one line on stderr and exit 2, never
a traceback and never death by a signal (a negative return code)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from app.engine.child_process import how_it_ended
from tests.support.malformed_models import MALFORMED, make_malformed_set
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def malformed(tmp_path_factory) -> dict[str, Path]:
    return make_malformed_set(tmp_path_factory.mktemp("malformed-cli"))


def cli(*args) -> subprocess.CompletedProcess:
    done = run_cli(*args, timeout=300, errors="replace")
    assert done.returncode >= 0, f"{how_it_ended(done.returncode)}: {done.stderr[-2000:]!r}"
    assert "Traceback" not in done.stderr, done.stderr
    return done


def one_line_error(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    return lines[0]


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_inspect_says_not_usable_and_why(malformed, kind):
    done = cli("inspect", malformed[kind])
    assert done.returncode == 0  # readable files are listed; exit 2 is for unreadable ones
    assert f"note: {kind}.gguf cannot be loaded:" in done.stdout
    assert MALFORMED[kind].reason in done.stdout


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_check_pair_refuses_an_unusable_file(malformed, tiny_models, kind):
    line = one_line_error(cli("check-pair", tiny_models.target, malformed[kind]))
    assert "the draft cannot be used" in line and MALFORMED[kind].reason in line


@pytest.mark.parametrize("kind", sorted(MALFORMED))
def test_generate_refuses_a_malformed_target(malformed, kind):
    line = one_line_error(cli("generate", "--target", malformed[kind], "--prompt", "Hello", "--max-tokens", 4))
    assert line.startswith("error: target:") and MALFORMED[kind].reason in line


def test_generate_refuses_a_malformed_draft(malformed, tiny_models):
    line = one_line_error(
        cli(
            "generate",
            "--target",
            tiny_models.target,
            "--draft",
            malformed["duplicate_token_text"],
            "--prompt",
            "Hello",
            "--max-tokens",
            4,
        )
    )
    assert line.startswith("error: draft:") and "have the same text" in line


def test_the_probe_refuses_what_the_header_checks_miss(malformed, monkeypatch, capsys):
    # With the header check blinded, the child-process probe still stops the file before anything loads it here.
    from app.cli import main

    def never(_args):
        raise AssertionError("the model was loaded in-process")

    monkeypatch.setattr("app.engine.gguf.checks.duplicate_token", lambda *a: None)
    monkeypatch.setattr("app.cli.generate_cmd.build_engine", never)
    assert main(["generate", "--target", str(malformed["duplicate_token_text"]), "--prompt", "Hello"]) == 2
    line = capsys.readouterr().err.strip()
    assert "llama.cpp crashes on it: llama-vocab.cpp" in line and "GGML_ASSERT" in line


def test_bench_refuses_a_malformed_target(malformed):
    line = one_line_error(cli("bench", "--target", malformed["add_bos_without_bos"], "--no-llama"))
    assert "has no BOS token" in line


@pytest.mark.parametrize(
    "args, words",
    [
        (["--max-tokens", "0"], "--max-tokens must be at least 1"),
        (["--max-tokens", "-5"], "--max-tokens must be at least 1"),
        (["--seed", "-1"], "--seed must be 0 or more"),
        (["--temperature", "nan"], "--temperature must be a number of 0 or more"),
        (["--temperature", "-0.5"], "--temperature must be a number of 0 or more"),
        (["--top-p", "nan"], "--top-p must be a number from 0 to 1"),
        (["--top-p", "-0.1"], "--top-p must be a number from 0 to 1"),
        (["--top-k", "-1"], "--top-k must be 0 (off) or more"),
        (["--min-p", "inf"], "--min-p must be a number from 0 to 1"),
        (["--ctx", "0"], "--ctx must be at least 1"),
        (["--threads", "0"], "--threads must be from 1 to 512"),
        (["--batch", "-1"], "--batch must be 0 (Auto) or more"),
        (
            ["--kv-type", "q8_0", "--flash-attn", "off"],
            "A q8_0 KV cache needs flash attention: llama.cpp cannot read a quantized cache without it. Turn flash "
            "attention on (or Auto), or keep the cache at f16.",
        ),
        (["--draft-max", "64"], "--draft-max must be a number from 0 to 63, or 'auto'"),
        (["--draft-max", "-1"], "--draft-max must be a number from 0 to 63, or 'auto'"),
    ],
)
def test_generate_refuses_settings_the_engine_cannot_run(tiny_models, args, words):
    line = one_line_error(cli("generate", "--target", tiny_models.target, "--prompt", "Hello", *args))
    assert line == f"error: {words}"


def test_generate_refuses_an_empty_prompt(tiny_models):
    assert (
        one_line_error(cli("generate", "--target", tiny_models.target, "--prompt", "")) == "error: the prompt is empty"
    )
    assert (
        one_line_error(cli("generate", "--target", tiny_models.target, "--chat", ""))
        == "error: the --chat message is empty"
    )


def test_generate_refuses_text_that_is_not_utf8(tiny_models, tmp_path):
    bad = tmp_path / "prompt.txt"
    bad.write_bytes(b"def f():\n    return '\xff'\n")
    line = one_line_error(cli("generate", "--target", tiny_models.target, "--prompt-file", bad))
    assert line == f"error: --prompt-file {bad} is not valid UTF-8 text (bad byte at offset 21)"
    # Undecodable bytes on the command line reach Python as lone surrogates.
    done = run_cli("generate", "--target", str(tiny_models.target), "--prompt", b"caf\xe9", timeout=300)
    assert done.returncode == 2 and done.stderr.strip() == "error: --prompt is not valid UTF-8 text"


def test_generate_reads_a_prompt_file(tiny_models, tmp_path):
    good = tmp_path / "prompt.txt"
    good.write_text("The cat", encoding="utf-8")
    done = cli("generate", "--target", tiny_models.target, "--prompt-file", good, "--max-tokens", 3)
    assert done.returncode == 0, done.stderr
    assert "3 tokens" in done.stderr


def test_bench_refuses_a_draft_length_past_the_cap(tiny_models):
    assert (
        one_line_error(cli("bench", "--target", tiny_models.target, "--k", "64", "--no-llama"))
        == "error: --k must be from 1 to 63"
    )
