"""Presets as stored with the app settings: the built-in Default always first, bad entries dropped with a warning,
names told apart without case."""

from __future__ import annotations

import json

from app.store import AppSettings, load_settings, save_settings
from app.store.presets import DEFAULT_PRESET, Preset, free_name, read_presets, stored


def test_presets_round_trip_with_the_settings_and_default_is_never_stored(tmp_path):
    path = tmp_path / "settings.json"
    presets = [*read_presets([])[0], Preset("Code review", system_prompt="Review.", temperature=0.2)]
    save_settings(AppSettings(presets=stored(presets)), path)
    again, dropped = read_presets(load_settings(path).presets)
    assert not dropped and [p.name for p in again] == [DEFAULT_PRESET, "Code review"]
    assert again[1].temperature == 0.2 and again[1].system_prompt == "Review."
    assert free_name(again, "code review") == "code review 2"


def test_unusable_presets_are_dropped_with_a_warning(tmp_path):
    path = tmp_path / "settings.json"
    path.write_text(json.dumps({"presets": [{"name": "default"}, {"name": ""}, {"name": "Ok", "top_k": 7}, 4]}))
    settings = load_settings(path)
    assert [p["name"] for p in settings.presets] == ["Ok"]
    assert "presets" in (settings.load_warning or "")
