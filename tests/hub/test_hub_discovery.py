"""Finding GGUF files a person already has, in place: HF cache (via huggingface_hub's scan), LM Studio, folders."""

from __future__ import annotations

import json

from fake_hf_server import payload

from app.platform import paths
from app.hub import discovery, environment


def test_files_in_the_hf_cache_are_found_in_place_with_their_repo(fake_hub, tmp_path):
    fake_hub.add_repo("acme/Cached-GGUF", {"cached-Q4_K_M.gguf": payload(5000, 1), "README.md": b"hi"})
    import huggingface_hub

    # Fill the cache the way any huggingface_hub user does, through the fake Hub.
    cached = huggingface_hub.hf_hub_download(
        "acme/Cached-GGUF",
        "cached-Q4_K_M.gguf",
        cache_dir=environment.hub_cache_dir(),
        endpoint=fake_hub.url,
        token=False,
    )
    [model] = discovery.find_in_hf_cache()
    assert model.repo_id == "acme/Cached-GGUF"
    assert model.source == "hf-cache"
    assert str(model.path) == cached  # the snapshot path itself: nothing was copied
    assert model.path.read_bytes() == fake_hub.find_file("acme/Cached-GGUF", "cached-Q4_K_M.gguf").data
    assert not paths.models_dir().exists()  # listed, not copied into the app's folder
    assert discovery.discover_model_folders(home=tmp_path) == [
        discovery.ModelFolder(environment.hub_cache_dir(), "hf-cache")
    ]


def test_no_hf_cache_means_nothing_found():
    assert discovery.find_in_hf_cache() == []


def test_lm_studio_models_are_found_with_their_publisher_and_repo(tmp_path):
    home = tmp_path / "home"
    model_dir = home / ".lmstudio" / "models" / "lmstudio-community" / "Qwen2.5-7B-Instruct-GGUF"
    model_dir.mkdir(parents=True)
    (model_dir / "Qwen2.5-7B-Instruct-Q4_K_M.gguf").write_bytes(b"GGUF" + b"\0" * 100)
    old = home / ".cache" / "lm-studio" / "models" / "x" / "y"
    old.mkdir(parents=True)
    (old / "old.gguf").write_bytes(b"GGUF")

    assert discovery.lm_studio_model_dirs(home) == [
        home / ".lmstudio" / "models",
        home / ".cache" / "lm-studio" / "models",
    ]
    found = discovery.discover_models(home=home, include_app=False, include_hf_cache=False)
    assert [(m.name, m.source, m.repo_id) for m in found] == [
        ("Qwen2.5-7B-Instruct-Q4_K_M.gguf", "lm-studio", "lmstudio-community/Qwen2.5-7B-Instruct-GGUF"),
        ("old.gguf", "lm-studio", "x/y"),
    ]
    assert [f.source for f in discovery.discover_model_folders(home=home)] == ["lm-studio", "lm-studio"]


def test_a_custom_lm_studio_folder_from_its_settings_is_used(tmp_path):
    home = tmp_path / "home"
    custom = tmp_path / "big-disk" / "models"
    custom.mkdir(parents=True)
    (home / ".lmstudio").mkdir(parents=True)
    (home / ".lmstudio" / "settings.json").write_text(json.dumps({"downloadsFolder": str(custom)}))
    assert discovery.lm_studio_model_dirs(home) == [custom]


def test_user_folders_group_split_parts_and_skip_partial_downloads(tmp_path):
    folder = tmp_path / "mine"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.gguf").write_bytes(b"GGUF" * 10)
    (folder / "sub" / "big-00001-of-00002.gguf").write_bytes(b"1" * 30)
    (folder / "sub" / "big-00002-of-00002.gguf").write_bytes(b"2" * 20)
    (folder / "orphan-00002-of-00002.gguf").write_bytes(b"x")  # no first part: cannot be loaded
    (folder / "unfinished.gguf.part").write_bytes(b"x")
    (folder / ".hidden").mkdir()
    (folder / ".hidden" / "h.gguf").write_bytes(b"x")

    found = discovery.discover_models([folder], home=tmp_path, include_hf_cache=False)
    assert [(m.path.relative_to(folder).as_posix(), m.size, len(m.parts)) for m in found] == [
        ("a.gguf", 40, 1),
        ("sub/big-00001-of-00002.gguf", 50, 2),
    ]
    assert all(m.source == "folder" for m in found)


def test_the_app_models_folder_comes_first_and_each_file_once(tmp_path):
    paths.models_dir().mkdir(parents=True)
    (paths.models_dir() / "m.gguf").write_bytes(b"GGUF")
    found = discovery.discover_models([paths.models_dir()], home=tmp_path, include_hf_cache=False)
    assert [(m.name, m.source) for m in found] == [("m.gguf", "app")]
