"""A preset chosen for a chat changes what its next request is sent with."""

from __future__ import annotations

from app.store.presets import Preset
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait


def test_a_preset_applied_to_a_chat_changes_the_requests_config(make_window, qtbot, fake_engine, model_folder,
                                                                tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "first")
    assert fake_engine.configs[-1]["temperature"] == 0.0
    window.chat_settings.apply_preset(Preset("Terse", system_prompt="Answer in one line.", temperature=0.5,
                                             max_tokens=64))
    send_and_wait(qtbot, window, "second")
    config, messages = fake_engine.configs[-1], fake_engine.requests[-1]
    assert (config["temperature"], config["max_tokens"]) == (0.5, 64)
    assert messages[0] == {"role": "system", "content": "Answer in one line."}
    assert window.store.get_chat(window.conversation.chat_id).settings.preset == "Terse"
