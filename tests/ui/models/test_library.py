"""The model library scan (plain Python, no Qt): which files it finds and what it says about them."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from app import library
from app.engine.targets import LocalModel
from app.platform import paths
from app.common.units import format_bytes, format_parameter_count


def test_folders_are_the_app_folder_the_users_and_the_hf_cache_each_once(tmp_path, monkeypatch):
    hub = tmp_path / "hf" / "hub"
    hub.mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(hub))
    mine = tmp_path / "mine"
    mine.mkdir()
    folders = library.library_folders([str(mine), str(mine)], scan_hf_cache=True)
    assert folders[0].path == paths.models_dir() and folders[0].source == "app"
    assert [f.path for f in folders].count(mine) == 1
    assert any(f.path == hub and f.source == "hf-cache" for f in folders)
    assert all(f.source != "hf-cache" for f in library.library_folders([str(mine)], scan_hf_cache=False))


def test_hf_cache_models_are_found_by_their_snapshot_name_not_as_blobs(tmp_path, tiny_models):
    hub = tmp_path / "hub"
    repo = hub / "models--someone--tiny"
    blob = repo / "blobs" / "0123abcd"
    blob.parent.mkdir(parents=True)
    shutil.copy2(tiny_models.target, blob)
    snapshot = repo / "snapshots" / "rev1"
    snapshot.mkdir(parents=True)
    os.symlink(os.path.relpath(blob, snapshot), snapshot / "tiny-q8_0.gguf")
    entries = library.scan_library([library.LibraryFolder(hub, "hf-cache")])
    assert [(Path(e.path).name, e.usable, e.source) for e in entries] == [("tiny-q8_0.gguf", True, "hf-cache")]
    assert entries[0].model_name == "Tiny Target" and entries[0].architecture == "llama"


def test_broken_files_are_listed_after_usable_ones_with_a_reason(tmp_path, tiny_models):
    for path in (tiny_models.target, tiny_models.truncated, tiny_models.not_gguf, tiny_models.split_part_second):
        shutil.copy2(path, tmp_path / path.name)
    (tmp_path / "notes.txt").write_text("not a model")
    entries = library.scan_library([library.LibraryFolder(tmp_path, "folder")])
    assert [e.usable for e in entries] == [True, False, False, False]
    problems = {Path(e.path).name: e.problem for e in entries if not e.usable}
    assert "truncated" in problems[tiny_models.truncated.name].lower()
    assert "not a gguf" in problems[tiny_models.not_gguf.name].lower()
    assert "first part" in problems[tiny_models.split_part_second.name]
    assert not any(p.startswith(str(tmp_path)) for p in problems.values())  # the row already names the file


def test_entry_summary_reads_like_a_spec_line(tiny_models):
    entry = library.inspect_entry(tiny_models.target)
    assert entry.summary == "llama · 339K · F32 · 2K ctx · 1.4 MB"
    assert format_parameter_count(1_540_000_000) == "1.54B" and format_parameter_count(494_000_000) == "494M"
    assert format_bytes(1_100_000_000) == "1.1 GB"


def test_draft_choices_put_the_best_compatible_draft_first(model_folder, tiny_models):
    entries = library.scan_library([library.LibraryFolder(model_folder, "folder")])
    choices = library.draft_choices(LocalModel(model_folder / tiny_models.target.name), entries)
    assert Path(choices[0].path).name == tiny_models.draft.name and choices[0].recommended
    assert sum(c.recommended for c in choices) == 1
    assert all(Path(c.path).name != tiny_models.target.name for c in choices)
    compatible = [c.compatible for c in choices]
    assert compatible == sorted(compatible, reverse=True)  # compatible first, then the rest
