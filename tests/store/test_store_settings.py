"""App settings: forgiving reads, atomic writes."""

from __future__ import annotations

import json

import pytest

from app.engine.config import THREADS_AUTO

import app.store.settings as settings_module
from app.platform.paths import settings_path
from app.store import AppSettings, StoreError, load_settings, save_settings


def test_missing_file_gives_defaults(specchat_home):
    settings = load_settings()
    assert settings == AppSettings()
    assert settings.load_warning is None
    assert settings.threads == THREADS_AUTO  # Auto: the physical performance cores, fewer while another program is busy
    assert settings.context_size == 4096 and settings.model_folders == []
    assert settings.show_highlighting and settings.scan_hf_cache
    assert not settings_path().exists()  # reading does not create the file


def test_round_trip_to_the_default_path(specchat_home):
    saved = AppSettings(
        model_folders=["/models", "C:\\Users\\ünï\\models"],
        threads=3,
        context_size=8192,
        target_gpu_layers=99,
        draft_gpu_layers=10,
        last_target="/models/big.gguf",
        last_draft=None,
        show_highlighting=False,
        scan_hf_cache=False,
    )
    save_settings(saved)
    path = settings_path()
    assert specchat_home in path.parents
    assert load_settings() == saved
    on_disk = json.loads(path.read_text(encoding="utf-8"))
    assert "load_warning" not in on_disk
    assert sorted(p.name for p in path.parent.iterdir()) == ["settings.json"]  # no temporary left behind


def test_unknown_keys_ignored_and_bad_values_fall_back(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(
        json.dumps(
            {
                "threads": "lots",
                "context_size": 2048,
                "from_the_future": [1, 2],
                "model_folders": ["/ok", 3],
                "last_target": "/m.gguf",
                "load_warning": "x",
            }
        )
    )
    settings = load_settings(path)
    assert settings.context_size == 2048 and settings.last_target == "/m.gguf"
    assert settings.threads == AppSettings().threads
    assert settings.model_folders == []
    assert "threads" in settings.load_warning and "model_folders" in settings.load_warning
    assert path.exists()  # a readable file with one bad value is not "broken"


@pytest.mark.parametrize(
    "content",
    [b'{"threads": 4,', b"[1, 2, 3]", b"\xff\xfe\x00garbage", b""],
    ids=["truncated", "not-an-object", "not-utf8", "empty"],
)
def test_corrupt_file_gives_defaults_and_is_kept(tmp_path, content):
    path = tmp_path / "settings.json"
    path.write_bytes(content)
    settings = load_settings(path)
    assert settings == AppSettings()
    broken = tmp_path / "settings.json.broken"
    assert str(path) in settings.load_warning and str(broken) in settings.load_warning
    assert broken.read_bytes() == content
    assert not path.exists()
    save_settings(settings, path)  # the next save does not touch the kept copy
    assert broken.read_bytes() == content


def test_an_earlier_broken_copy_is_not_overwritten(tmp_path):
    path = tmp_path / "settings.json"
    (tmp_path / "settings.json.broken").write_text("first")
    path.write_text("second {")
    settings = load_settings(path)
    assert (tmp_path / "settings.json.broken").read_text() == "first"
    assert (tmp_path / "settings.json.broken.1").read_text() == "second {"
    assert "settings.json.broken.1" in settings.load_warning


def test_failed_replace_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "settings.json"
    save_settings(AppSettings(threads=2), path)
    before = path.read_bytes()

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(settings_module.os, "replace", refuse)
    with pytest.raises(StoreError, match="settings.json"):
        save_settings(AppSettings(threads=16), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert load_settings(path).threads == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_failed_write_leaves_the_old_file_intact(tmp_path, monkeypatch):
    path = tmp_path / "settings.json"
    save_settings(AppSettings(context_size=1024), path)
    before = path.read_bytes()

    def fail_fsync(fd):
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(settings_module.os, "fsync", fail_fsync)
    with pytest.raises(StoreError):
        save_settings(AppSettings(context_size=2048), path)
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["settings.json"]


def test_save_creates_the_folder(tmp_path):
    path = tmp_path / "a" / "b" / "settings.json"
    save_settings(AppSettings(last_draft="d.gguf"), path)
    assert load_settings(path).last_draft == "d.gguf"


def test_new_installs_get_auto_gpu_layers_and_older_files_keep_their_number(tmp_path):
    from app.engine.config import GPU_LAYERS_AUTO

    assert (AppSettings().target_gpu_layers, AppSettings().draft_gpu_layers) == (GPU_LAYERS_AUTO, GPU_LAYERS_AUTO)
    path = tmp_path / "settings.json"
    save_settings(AppSettings(draft_gpu_layers=8), path)
    loaded = load_settings(path)
    assert (loaded.target_gpu_layers, loaded.draft_gpu_layers) == (GPU_LAYERS_AUTO, 8)
    # A file written before Auto existed holds 0 for both (the old default): that stays 0.
    path.write_text(json.dumps({"threads": 2, "target_gpu_layers": 0, "draft_gpu_layers": 0}))
    old = load_settings(path)
    assert (old.target_gpu_layers, old.draft_gpu_layers) == (0, 0) and old.load_warning is None
    path.write_text(json.dumps({"target_gpu_layers": -7}))
    odd = load_settings(path)
    assert odd.target_gpu_layers == GPU_LAYERS_AUTO and "target_gpu_layers" in odd.load_warning


def test_the_theme_follows_the_system_by_default_and_an_unknown_one_says_so(tmp_path):
    path = tmp_path / "settings.json"
    assert load_settings(path).theme == "system"
    save_settings(AppSettings(theme="dark"), path)
    assert load_settings(path).theme == "dark"
    path.write_text(json.dumps({"theme": "solarized"}))
    odd = load_settings(path)
    assert odd.theme == "system" and "theme" in odd.load_warning


def test_a_server_address_that_is_not_one_is_dropped_with_the_warning(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"servers": ["not a url", "gpu-box:8080", "ftp://x"]}))
    settings = load_settings(path)
    assert settings.servers == ["gpu-box:8080"]
    assert "(servers)" in settings.load_warning


@pytest.mark.parametrize("host", ["127.0.0.1; rm -rf ~", "$(reboot)", "a b", "host`id`", ""])
def test_an_api_host_that_is_no_address_is_refused_with_the_warning(tmp_path, host):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"api_server": True, "api_host": host}))
    settings = load_settings(path)
    assert settings.api_host == "127.0.0.1" and "(api_host)" in settings.load_warning


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::1]", "localhost", "gpu-box.lan", "192.168.1.20"])
def test_an_api_host_that_is_an_address_is_kept(tmp_path, host):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"api_host": host}))
    settings = load_settings(path)
    assert settings.api_host == host and settings.load_warning is None
