"""A settings file with 20,000 presets opens with the first 1,000 loaded and a
sentence for the rest (reading them all compared every name with every other: minutes on this
machine). (Issue 44, class 13, in the window.)"""

from __future__ import annotations

import json
from pathlib import Path

from app.store.presets import MAX_PRESETS


def test_twenty_thousand_presets_load_the_first_thousand_with_a_sentence(make_window):
    presets = [{"name": f"Preset {i}", "system_prompt": "Be brief.", "temperature": 0.7} for i in range(20_000)]
    window = make_window(presets=presets)
    banner = window.error_banner.text()
    assert "19,000 more presets were not loaded" in banner and "The whole file was kept as" in banner
    kept = Path(banner.split("The whole file was kept as ", 1)[1].rstrip("."))
    assert json.loads(kept.read_text())["presets"][-1]["name"] == "Preset 19999"  # nothing the user wrote is lost
    offered = [p.name for p in window.chat_settings.presets_source()]
    assert len(offered) == MAX_PRESETS + 1 and offered[:2] == ["Default", "Preset 0"]
    assert offered[-1] == f"Preset {MAX_PRESETS - 1}"
    assert MAX_PRESETS < window.chat_header.header.preset.count() <= MAX_PRESETS + 2  # and a "custom" entry
