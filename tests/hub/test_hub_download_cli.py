"""`specchat-cli download` against the fake Hub: choosing files, progress, exit status and messages."""

from __future__ import annotations

import _thread
import io
import socket
import threading
import time

import pytest
from fake_hf_server import payload

from app.platform import paths
from app.cli import main
from app.cli.download_cmd import TerminalProgress
from app.hub.download import DownloadJob, DownloadProgress

SIZE = 200 * 1024


@pytest.fixture
def hub(fake_hub):
    fake_hub.add_repo(
        "acme/Coder-GGUF",
        {
            "coder-Q4_K_M.gguf": payload(SIZE, 1),
            "coder-Q8_0.gguf": payload(SIZE, 2),
            "coder-Q4_K_S.gguf": payload(1000, 3),
            "BF16/coder-BF16-00001-of-00002.gguf": payload(3000, 4),
            "BF16/coder-BF16-00002-of-00002.gguf": payload(2000, 5),
        },
    )
    fake_hub.add_repo("acme/One-GGUF", {"one-Q4_0.gguf": payload(4000, 6), "README.md": b"readme"})
    fake_hub.add_repo("meta/Gated-GGUF", {"gated.gguf": payload(1000, 7)}, gated=True)
    return fake_hub


def test_download_by_quantization_into_the_models_folder(hub, capsys):
    assert main(["download", "acme/Coder-GGUF", "Q4_K_M"]) == 0
    out, err = capsys.readouterr()
    target = paths.models_dir() / "coder-Q4_K_M.gguf"
    assert out.strip() == str(target)
    assert target.read_bytes() == hub.find_file("acme/Coder-GGUF", "coder-Q4_K_M.gguf").data
    assert "100%" in err  # the progress ends complete (stderr is not a terminal here: plain lines)
    assert not (paths.models_dir() / "coder-Q4_K_S.gguf").exists()


def test_a_split_model_downloads_all_parts_to_dest(hub, capsys, tmp_path):
    assert main(["download", "acme/Coder-GGUF", "*bf16*", "--dest", str(tmp_path)]) == 0
    out, _ = capsys.readouterr()
    assert out.strip() == str(tmp_path / "coder-BF16-00001-of-00002.gguf")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "coder-BF16-00001-of-00002.gguf",
        "coder-BF16-00002-of-00002.gguf",
    ]


def test_a_repo_with_one_model_needs_no_pattern(hub, capsys, tmp_path):
    assert main(["download", "acme/One-GGUF", "--dest", str(tmp_path)]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["one-Q4_0.gguf"]


def test_several_models_and_no_pattern_lists_them(hub, capsys):
    assert main(["download", "acme/Coder-GGUF"]) == 2
    err = capsys.readouterr().err
    assert "name one with FILE_PATTERN" in err
    assert "Q4_K_M" in err and "coder-BF16.gguf  (2 parts)" in err


def test_a_word_matching_several_models_asks_to_be_precise(hub, capsys):
    assert main(["download", "acme/Coder-GGUF", "Q4"]) == 2
    assert "matches several models" in capsys.readouterr().err
    assert not paths.models_dir().exists()


def test_a_pattern_matching_nothing_lists_what_there_is(hub, capsys):
    assert main(["download", "acme/Coder-GGUF", "Q2_K"]) == 2
    assert "Nothing in acme/Coder-GGUF matches 'Q2_K'" in capsys.readouterr().err


@pytest.mark.parametrize(
    "repo, pattern, message",
    [
        ("acme/Missing-GGUF", "x", "No repository acme/Missing-GGUF"),
        ("not a repo", "x", "not a valid repository name"),
        ("meta/Gated-GGUF", "gated", "gated: accept its terms.*token"),
    ],
)
def test_failures_exit_non_zero_with_a_clear_message(hub, capsys, repo, pattern, message):
    assert main(["download", repo, pattern]) == 1
    err = capsys.readouterr().err
    assert err.startswith("specchat-cli download: ")
    import re

    assert re.search(message, err)
    assert "Traceback" not in err


def test_hub_unreachable_exits_1(online, monkeypatch, capsys):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    assert main(["download", "acme/Coder-GGUF", "Q4_K_M"]) == 1
    assert "Can't reach the Hugging Face Hub" in capsys.readouterr().err


def test_size_mismatch_exits_1(hub, capsys, tmp_path):
    hub.failures.served_extra["coder-Q8_0.gguf"] = -100
    assert main(["download", "acme/Coder-GGUF", "Q8_0", "--dest", str(tmp_path)]) == 1
    assert "should be" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_not_enough_space_exits_1_before_downloading(hub, capsys, tmp_path):
    hub.failures.announced_size["coder-Q8_0.gguf"] = 10**18
    assert main(["download", "acme/Coder-GGUF", "Q8_0", "--dest", str(tmp_path)]) == 1
    assert "Not enough disk space" in capsys.readouterr().err
    assert not hub.gets()


def test_ctrl_c_keeps_the_partial_file_and_the_same_command_resumes(hub, capsys, tmp_path, monkeypatch):
    # The server holds the file half way until the download is cancelled, so Ctrl-C always lands mid-file (with
    # delays alone, a busy CI machine sometimes finished the file before the key was "pressed"). The key is pressed
    # once a third is on disk: the last few KB received may still be in the file's write buffer.
    hub.failures.pause_after["coder-Q8_0.gguf"] = SIZE // 2
    part = tmp_path / "coder-Q8_0.gguf.part"
    cancel = DownloadJob.cancel

    def cancel_and_let_the_server_go_on(job) -> None:
        cancel(job)
        hub.failures.resume.set()

    monkeypatch.setattr(DownloadJob, "cancel", cancel_and_let_the_server_go_on)

    def press_ctrl_c_when_a_third_is_here() -> None:
        # The server holds the rest, so waiting long costs nothing; 10 s was too short on a loaded machine (the
        # download had not reached a third, the server was let go and the command finished with 0).
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if part.exists() and part.stat().st_size >= SIZE // 3:
                _thread.interrupt_main()
                return
            time.sleep(0.005)
        hub.failures.resume.set()  # never got there: let the download end, and the assertion below say so

    presser = threading.Thread(target=press_ctrl_c_when_a_third_is_here, daemon=True)
    presser.start()
    assert main(["download", "acme/Coder-GGUF", "Q8_0", "--dest", str(tmp_path)]) == 130
    presser.join()
    assert "run the same command again to resume" in capsys.readouterr().err
    kept = part.stat().st_size
    assert 0 < kept < SIZE

    hub.failures.pause_after.clear()
    assert main(["download", "acme/Coder-GGUF", "Q8_0", "--dest", str(tmp_path)]) == 0
    assert "resuming" in capsys.readouterr().err
    assert (tmp_path / "coder-Q8_0.gguf").read_bytes() == hub.find_file("acme/Coder-GGUF", "coder-Q8_0.gguf").data
    assert hub.gets()[-1].headers.get("range") == f"bytes={kept}-"


def test_terminal_progress_redraws_one_line_on_a_tty():
    out = io.StringIO()
    bar = TerminalProgress(out, is_tty=True)
    bar(DownloadProgress("downloading", "m.gguf", 0, 2, 500_000_000, 2_000_000_000, 10_000_000, 150))
    bar(DownloadProgress("downloading", "m.gguf", 0, 2, 1_000_000_000, 2_000_000_000, 10_000_000, 100))
    bar.finish()
    text = out.getvalue()
    assert text.count("\r") == 2 and text.endswith("\n") and text.count("\n") == 1
    assert "50%  1.0 GB / 2.0 GB  10.0 MB/s  1 min 40 s left  file 1/2: m.gguf" in text
