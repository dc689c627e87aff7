"""`specchat-cli inspect` and `specchat-cli check-pair`: what a person sees and the exit codes scripts rely on."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from app.cli import SUBCOMMANDS, main
from app.common.units import format_bytes
from tests.support.processes import run_cli


def test_inspect_prints_a_table(tiny_models, capsys):
    assert main(["inspect", str(tiny_models.target), str(tiny_models.bad_vocab_type)]) == 0
    out = capsys.readouterr().out
    header, target_row, spm_row = out.splitlines()[:3]
    assert header.split() == ["FILE", "NAME", "ARCH", "PARAMS", "QUANT", "CTX", "VOCAB", "SIZE"]
    assert target_row.startswith("tiny-target.gguf")
    for cell in ("Tiny Target", "llama", "339K", "F32", "2048", "BPE 333", "1.4 MB"):
        assert cell in target_row
    assert "SPM 317" in spm_row


def test_inspect_json(tiny_models, capsys):
    assert main(["inspect", "--json", str(tiny_models.draft)]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    assert entry["path"] == str(tiny_models.draft)
    assert (entry["architecture"], entry["vocab_type"], entry["vocab_size"]) == ("llama", "BPE", 333)
    assert entry["usable"] is True and entry["has_chat_template"] is True


def test_inspect_reports_unreadable_files_and_shows_the_rest(tiny_models, tmp_path, capsys):
    files = [tiny_models.not_gguf, tiny_models.target, tiny_models.truncated, tmp_path / "absent.gguf"]
    assert main(["inspect", *map(str, files)]) == 2
    captured = capsys.readouterr()
    assert "tiny-target.gguf" in captured.out
    assert "not a GGUF file (bad magic)" in captured.err
    assert "truncated" in captured.err
    assert "absent.gguf: file not found" in captured.err
    assert "Traceback" not in captured.err


def test_inspect_notes_unusable_split_part(tiny_models, capsys):
    assert main(["inspect", str(tiny_models.split_part_second)]) == 0
    assert "open the first part" in capsys.readouterr().out


@pytest.mark.parametrize(
    "member, code, words",
    [
        ("draft", 0, "compatible"),
        ("ok_vocab_size_close", 0, "compatible"),
        ("bad_vocab_size", 1, "not compatible: different vocabulary sizes: target 333, draft 533"),
        ("bad_bos", 1, "not compatible: the draft starts every prompt with a BOS token"),
    ],
)
def test_check_pair(tiny_models, capsys, member, code, words):
    assert main(["check-pair", str(tiny_models.target), str(getattr(tiny_models, member))]) == code
    out = capsys.readouterr().out.strip()
    assert out.startswith(words)
    if code == 0:
        assert out == "compatible"


def test_check_pair_json(tiny_models, capsys):
    assert main(["check-pair", "--json", str(tiny_models.target), str(tiny_models.bad_token_text)]) == 1
    result = json.loads(capsys.readouterr().out)
    assert result["compatible"] is False and result["rule"] == "token_text"


def test_check_pair_unreadable(tiny_models, capsys):
    assert main(["check-pair", str(tiny_models.target), str(tiny_models.not_gguf)]) == 2
    captured = capsys.readouterr()
    assert "bad magic" in captured.err and captured.out == ""


def test_format_bytes():
    # One convention everywhere (app.common.units): decimal units, as the Hub gives sizes.
    assert format_bytes(1_117_320_768) == "1.1 GB"
    assert format_bytes(491_400_064) == "491 MB"
    assert format_bytes(512) == "512 B"


@pytest.mark.real_models
def test_real_models_in_the_cli(real_models, capsys):
    assert main(["inspect", str(real_models["target"])]) == 0
    row = capsys.readouterr().out.splitlines()[1]
    for cell in ("qwen2", "1.78B", "Q4_K_M", "32768", "BPE 151936", "1.1 GB"):
        assert cell in row
    assert main(["check-pair", str(real_models["target"]), str(real_models["draft"])]) == 0
    assert main(["check-pair", str(real_models["target"]), str(real_models["gemma"])]) == 1


def test_a_command_loads_only_what_it_runs_and_help_still_names_every_command():
    # Every `specchat-cli` start paid for numpy, the bench and the document index (about 0.3 s here) whatever it
    # ran; `inspect` needs none of them.
    probe = (
        "import sys; from app.cli import build_parser; build_parser(['inspect', 'x.gguf']); "
        "print(sorted(m for m in ('numpy', 'app.bench.report', 'app.documents.index') if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr
    listed = run_cli("--help", timeout=120).stdout
    assert all(name in listed for name in SUBCOMMANDS)
    refused = run_cli("nosuch", timeout=120)
    assert refused.returncode == 2 and "choose from 'inspect', 'check-pair', 'generate'" in refused.stderr
