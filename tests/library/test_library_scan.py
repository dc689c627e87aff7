"""The library scan survives odd folders: links that loop, FIFOs named .gguf, and being cancelled half way."""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path

import pytest

from app import library
from tests.support.processes import run_cli

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs symlinks and FIFOs (POSIX)")


def test_links_back_to_the_folder_itself_are_followed_once(tmp_path, tiny_models):
    shutil.copy2(tiny_models.target, tmp_path / "a.gguf")
    (tmp_path / "sub").mkdir()
    shutil.copy2(tiny_models.draft, tmp_path / "sub" / "b.gguf")
    os.symlink(tmp_path, tmp_path / "loop1")
    os.symlink("..", tmp_path / "sub" / "loop2")
    entries = library.scan_library([library.LibraryFolder(tmp_path, "folder")])
    assert sorted(Path(e.path).name for e in entries) == ["a.gguf", "b.gguf"]


def test_a_fifo_named_gguf_is_listed_as_unusable_without_blocking(tmp_path, tiny_models):
    shutil.copy2(tiny_models.target, tmp_path / "good.gguf")
    os.mkfifo(tmp_path / "x.gguf")
    entries = library.scan_library([library.LibraryFolder(tmp_path, "folder")])
    assert [(Path(e.path).name, e.usable) for e in entries] == [("good.gguf", True), ("x.gguf", False)]
    assert "not a regular file" in entries[1].problem


def test_inspect_refuses_a_fifo_in_one_line(tmp_path):
    fifo = tmp_path / "x.gguf"
    os.mkfifo(fifo)
    done = run_cli("inspect", fifo, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        f"specchat-cli inspect: {fifo}: is not a regular file, not a model file"
    ]


class CancelAfter:
    """A cancel flag that turns on after `n` checks, like a window closed half way through a scan."""

    def __init__(self, n: int):
        self.left = n

    def is_set(self) -> bool:
        self.left -= 1
        return self.left < 0


def test_a_cancelled_scan_stops_early_with_what_it_found(tmp_path, tiny_models):
    for i in range(20):
        folder = tmp_path / f"f{i:02d}"
        folder.mkdir()
        shutil.copy2(tiny_models.draft, folder / f"m{i:02d}.gguf")
    everything = library.scan_library([library.LibraryFolder(tmp_path, "folder")])
    assert len(everything) == 20
    assert library.find_gguf_files(tmp_path, CancelAfter(5)) == everything_paths(everything)[:4]
    assert len(library.scan_library([library.LibraryFolder(tmp_path, "folder")], cancel=CancelAfter(8))) < 20


def everything_paths(entries):
    return sorted(Path(e.path) for e in entries)


def test_stopping_the_library_thread_cancels_a_slow_scan(qtbot, tmp_path, tiny_models, monkeypatch):
    from app.ui.models.library_worker import LibraryThread

    for i in range(50):
        shutil.copy2(tiny_models.draft, tmp_path / f"m{i:02d}.gguf")
    started = threading.Event()
    thread = LibraryThread()

    def slow_inspect(path, folder=None):  # a disk that takes ages per file, until the scan is cancelled
        started.set()
        thread._cancel.wait(30)
        return library.ModelEntry(str(path), path.stem, 0, str(tmp_path))

    monkeypatch.setattr(library, "inspect_entry", slow_inspect)
    thread.request_scan(1, [library.LibraryFolder(tmp_path, "folder")])
    assert started.wait(30)
    assert thread.stop() is True
