"""A preset chosen for a chat changes what its next request is sent with."""

from __future__ import annotations

from app.store.presets import Preset
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait


def test_a_preset_applied_to_a_chat_changes_the_requests_config(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "first")
    assert fake_engine.configs[-1]["temperature"] == 0.0
    window.chat_settings.apply_preset(
        Preset("Terse", system_prompt="Answer in one line.", temperature=0.5, max_tokens=64)
    )
    send_and_wait(qtbot, window, "second")
    config, messages = fake_engine.configs[-1], fake_engine.requests[-1]
    assert (config["temperature"], config["max_tokens"]) == (0.5, 64)
    assert messages[0] == {"role": "system", "content": "Answer in one line."}
    assert window.store.get_chat(window.conversation.chat_id).settings.preset == "Terse"


def test_the_presets_page_adds_renames_duplicates_and_deletes_but_keeps_default(qtbot):
    from app.store import AppSettings
    from app.store.presets import read_presets
    from app.ui.settings.dialog import AppSettingsDialog

    dialog = AppSettingsDialog(AppSettings(), api_state="Off")
    qtbot.addWidget(dialog)
    page = dialog.presets_page
    assert not page.delete()  # the built-in Default stays
    page.add()
    assert page.rename("Code review")
    page.temperature.setValue(0.3)
    page.duplicate()
    page.delete()  # the copy
    stored = dialog.settings().presets
    presets, _ = read_presets(stored)
    assert [p.name for p in presets] == ["Default", "Code review"] and presets[1].temperature == 0.3


def test_a_preset_chosen_in_the_chat_settings_fills_them(make_window, qtbot):
    from app.ui.settings.chat_dialog import ChatSettingsDialog

    window = make_window(presets=[{"name": "Creative", "temperature": 0.9, "system_prompt": "Be bold."}])
    dialog = ChatSettingsDialog(window.chat_settings.current(), window, presets=window.chat_settings.presets_source())
    qtbot.addWidget(dialog)
    dialog.choose_preset("Creative")
    chosen = dialog.settings()
    assert (chosen.temperature, chosen.system_prompt, chosen.preset) == (0.9, "Be bold.", "Creative")


def test_the_headers_preset_combo_applies_a_preset_to_the_open_chat(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(
        engine_factory=fake_engine,
        presets=[{"name": "Plain and warm", "temperature": 0.8, "system_prompt": "Be kind.", "speculative": False}],
    )
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "first")
    combo = window.chat_header.header.preset
    assert combo.isVisibleTo(window) and combo.currentText() == "Own settings"
    assert [combo.itemText(i) for i in range(combo.count())] == ["Own settings", "Default", "Plain and warm"]
    # Issue 55, item 6: "No preset" and "Default" both stood there, unexplained.
    assert '"Own settings": no preset chosen' in combo.toolTip() and '"Default": the built-in' in combo.toolTip()
    combo.setFocus()
    qtbot.keyClick(combo, "P")  # a key press picks the item as a person would (activated, not only changed)
    assert combo.currentText() == "Plain and warm"
    settings = window.store.get_chat(window.conversation.chat_id).settings
    assert (settings.preset, settings.temperature, settings.system_prompt) == ("Plain and warm", 0.8, "Be kind.")
    assert not window.model_bar.speculative()  # the switch shows the preset's setting at once, as Chat settings do
    send_and_wait(qtbot, window, "second")
    assert fake_engine.configs[-1]["temperature"] == 0.8 and fake_engine.configs[-1]["speculative"] is False
    assert [combo.itemText(i) for i in range(combo.count())] == ["Default", "Plain and warm"]
