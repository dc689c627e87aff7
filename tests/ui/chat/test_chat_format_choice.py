"""A model file without a chat template gets one clear sentence and the choice of how its prompts are
written (raw completion, a built-in template, a template file), remembered per model file; raw completion writes
no chat markers, so a base model has none to loop on. (Issue 36.)"""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig
from app.engine.local.chat_format import raw_prompt
from app.store import load_settings
from app.testing.synthetic import DRAFT_LAYERS, write_tiny_model
from app.ui.chat.chat_format_choice import sentence
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait

CHAT_MARKERS = ("<|im_start|>", "<|im_end|>", "<start_of_turn>")


def _without_template(writer) -> None:
    del writer.kv_data[0]["tokenizer.chat_template"]


def test_raw_completion_is_the_text_alone():
    prompt = raw_prompt([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "The sea is"}])
    assert prompt.text == "Be brief.\n\nThe sea is\n\n" and prompt.markup == ()


def test_a_model_without_a_template_gets_the_sentence_and_the_choice_remembered(
    make_window, qtbot, model_folder, tiny_models
):
    bare = write_tiny_model(model_folder / "tiny-base.gguf", n_layer=DRAFT_LAYERS, edit=_without_template)
    window = make_window()
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    choice = window.chat_format
    assert choice.row.isHidden()  # the tiny target has its own template: nothing to ask

    choose_pair(qtbot, window, bare, NGRAM_KEY)
    qtbot.waitUntil(lambda: not choice.row.isHidden(), timeout=5000)
    assert (
        choice.label.text()
        == sentence("tiny-base")
        == (
            "tiny-base has no chat template, so SpecChat cannot know how it expects a conversation. "
            "Write its prompts as:"
        )
    )
    offered = [choice.picker.itemText(n) for n in range(choice.picker.count())]
    assert offered == [
        "Raw completion (the text alone, no chat markers)",
        "ChatML template",
        "Gemma template",
        "Template file…",
    ]
    assert choice.picker.currentText().startswith("Raw completion")  # until the user picks another
    assert window.generation_config().chat_format == "raw"

    window.update_chat_settings(max_tokens=24)
    reply = window.store.get_message(send_and_wait(qtbot, window, "the cat sat", timeout=60000)).content
    assert not any(marker in reply for marker in CHAT_MARKERS)

    choice.picker.setCurrentIndex(1)
    choice.picker.activated.emit(1)  # ChatML, as a user picks it
    config = window.generation_config()
    assert config.chat_format == "template" and "<|im_start|>" in config.chat_template
    assert load_settings().chat_formats == {str(bare): "builtin:ChatML"}  # remembered for this file, saved

    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    qtbot.waitUntil(choice.row.isHidden, timeout=5000)
    assert window.generation_config().chat_format == "model"  # a model with its own template keeps it


@pytest.mark.real_models
def test_gemma_without_a_template_does_not_loop_on_chat_markers_in_raw_completion(real_models):
    from app.engine.local.engine import SpecEngine
    from app.engine.config import LoadSettings
    from app.engine.events import TokenEvent

    engine = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1))
    try:
        engine.load_target(real_models["gemma"])
        config = GenerationConfig(max_tokens=48, speculative=False, chat_format="raw", history=False)
        tokens = [
            e.text
            for e in engine.chat([{"role": "user", "content": "The sea at night is"}], config)
            if isinstance(e, TokenEvent)
        ]
    finally:
        engine.close()
    reply = "".join(tokens)
    assert tokens and not any(marker in reply for marker in CHAT_MARKERS), reply
