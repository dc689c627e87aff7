"""A model without a chat template and the Model library (issue 45, items 9 and 10): raw completion gets a repeat
penalty unless the chat sets one (as LM Studio does), Chat settings has the penalty, and the library marks the
loaded model, says which file has no template, and shows the context the Memory column is worked out at."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog

from app.testing.synthetic import DRAFT_LAYERS, write_tiny_model
from app.ui.chat.chat_format_choice import RAW_REPEAT_PENALTY
from app.ui.settings.chat_dialog import ChatSettingsDialog
from tests.ui.window_helpers import choose_pair


def _without_template(writer) -> None:
    del writer.kv_data[0]["tokenizer.chat_template"]


def test_raw_completion_gets_a_repeat_penalty_unless_the_chat_sets_one(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    bare = write_tiny_model(model_folder / "tiny-base.gguf", n_layer=DRAFT_LAYERS, edit=_without_template)
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    assert window.generation_config().repeat_penalty == 1.0  # a chat model: off, as llama-server has it
    choose_pair(qtbot, window, bare, None)
    config = window.generation_config()
    assert (config.chat_format, config.repeat_penalty) == ("raw", RAW_REPEAT_PENALTY)

    def set_penalty(dialog):
        assert dialog.repeat_penalty.text() == "Auto"
        dialog.repeat_penalty.setValue(1.3)
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(ChatSettingsDialog, "exec", set_penalty)
    window.chat_settings.edit()
    assert window.generation_config().repeat_penalty == 1.3


def test_the_library_marks_the_loaded_model_and_its_context(make_window, qtbot, fake_engine, model_folder, tiny_models):
    bare = write_tiny_model(model_folder / "tiny-base.gguf", n_layer=DRAFT_LAYERS, edit=_without_template)
    window = make_window(engine_factory=fake_engine, context_size=1024)
    qtbot.waitUntil(lambda: window.library.row_of(str(bare)) >= 0, timeout=10000)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    library = window.library

    def cell(path, column: str, role=Qt.ItemDataRole.DisplayRole):
        return library.data(library.index(library.row_of(str(path)), library.COLUMNS.index(column)), role)

    assert cell(model_folder / tiny_models.target.name, "Status") == "Loaded"
    assert cell(model_folder / tiny_models.draft.name, "Status") == "Loaded as the draft"
    assert cell(model_folder / tiny_models.draft_identical.name, "Status") == "Ready"
    assert cell(bare, "Status") == "Ready · no chat template"
    # The Context column says the context the Memory column is worked out at (the app's 1,024 here).
    entry = library.entry_for(str(model_folder / tiny_models.target.name))
    assert cell(model_folder / tiny_models.target.name, "Context") == f"{min(1024, entry.context_length):,}"
