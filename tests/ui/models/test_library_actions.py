"""The Model library: what each model takes in memory, its own settings (saved in settings.json and used at its
next load), and Load, Forget and Delete on the selected file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QDialogButtonBox, QLabel

from app.store import load_settings
from app.ui.models.library_model import LibraryModel, NGRAM_KEY
from tests.ui.window_helpers import choose_pair


def open_library(qtbot, window, select: Path | None = None):
    window.library_ctl.open_library()
    dialog = window.library_ctl.library_dialog
    qtbot.waitUntil(dialog.isVisible)
    if select is not None:
        dialog.select(str(select))
    return dialog


def memory_text(window, path: Path) -> str:
    return window.library.index(window.library.row_of(str(path)), LibraryModel.MEMORY_COLUMN).data()


def test_each_model_shows_what_it_takes_in_memory_at_the_chosen_context_and_kv_type(
    make_window, qtbot, model_folder, tiny_models
):
    window = make_window(context_size=2048)
    target = model_folder / tiny_models.target.name
    at_f16 = window.library.entry_for(str(target)).memory(2048, "f16")
    assert memory_text(window, target) == at_f16.label
    tip = window.library.index(window.library.row_of(str(target)), LibraryModel.MEMORY_COLUMN).data(
        Qt.ItemDataRole.ToolTipRole
    )
    assert "of KV cache (2,048 tokens, f16)" in tip
    window.confirm = lambda *args: False
    window.apply_app_settings(dataclasses.replace(window.settings, kv_cache_type="q4_0"))
    assert memory_text(window, target) == window.library.entry_for(str(target)).memory(2048, "q4_0").label


def test_the_model_settings_editor_saves_to_settings_json_and_the_next_load_uses_them(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    window = make_window(engine_factory=fake_engine)
    target = str(model_folder / tiny_models.target.name)
    dialog = open_library(qtbot, window, Path(target))
    assert dialog.settings_button.isEnabled()
    editors = []

    def accept(editor):
        editors.append(editor)
        editor.context_size.setValue(1024)
        editor.load_fields.kv_cache_type.setCurrentIndex(editor.load_fields.kv_cache_type.findData("q8_0"))
        editor.load_fields.batch.setValue(128)
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr("app.ui.models.model_settings_dialog.ModelSettingsDialog.exec", accept)
    dialog.settings_button.click()
    assert editors and "KV cache (1,024 tokens, q8_0)" in editors[0].load_fields.memory.text()
    assert load_settings().model_defaults[target] == {"context_size": 1024, "kv_cache_type": "q8_0", "batch_size": 128}
    choose_pair(qtbot, window, Path(target), NGRAM_KEY)
    qtbot.waitUntil(lambda: fake_engine.load_settings.get("kv_type") == "q8_0", timeout=10000)
    assert fake_engine.load_settings["n_ctx"] == 1024 and fake_engine.load_settings["n_batch"] == 128
    assert memory_text(window, Path(target)) == window.library.entry_for(target).memory(1024, "q8_0").label


def test_the_editor_refuses_a_quantized_cache_without_flash_attention_with_a_sentence(
    make_window, qtbot, model_folder, tiny_models
):
    window = make_window()
    target = str(model_folder / tiny_models.target.name)
    editor = window.model_actions.dialog_for(target)
    qtbot.addWidget(editor)
    fields = editor.load_fields
    fields.kv_cache_type.setCurrentIndex(fields.kv_cache_type.findData("q4_0"))
    fields.flash_attention.setCurrentIndex(fields.flash_attention.findData("off"))
    assert fields.problem.isVisibleTo(editor)
    assert fields.problem.text().startswith("A q4_0 KV cache needs flash attention")
    ok = editor.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok)
    ok.click()  # as the user does
    assert editor.result() != QDialog.DialogCode.Accepted  # still open: nothing refused is saved
    fields.flash_attention.setCurrentIndex(fields.flash_attention.findData("on"))
    ok.click()
    assert editor.result() == QDialog.DialogCode.Accepted  # the same button does save a combination that works


def test_load_from_the_library_loads_the_file_as_the_target(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    target = model_folder / tiny_models.target.name
    dialog = open_library(qtbot, window, target)
    dialog.load_button.click()
    qtbot.waitUntil(lambda: window.session.target_key() == str(target) and window.models_ready(), timeout=10000)


def test_forget_takes_the_row_off_the_list_and_keeps_the_file(make_window, qtbot, model_folder, tiny_models):
    window = make_window()
    draft = model_folder / tiny_models.draft.name
    dialog = open_library(qtbot, window, draft)
    dialog.forget_button.click()
    assert window.library.row_of(str(draft)) < 0 and draft.is_file()
    assert load_settings().forgotten_models == [str(draft)]
    window.library_ctl.rescan()  # a scan does not bring it back
    qtbot.waitUntil(window.library_ready)
    assert window.library.row_of(str(draft)) < 0
    window.model_actions.show_forgotten()
    qtbot.waitUntil(lambda: window.library_ready() and window.library.row_of(str(draft)) >= 0)


def test_delete_file_asks_first_and_says_the_size(make_window, qtbot, model_folder, tiny_models):
    window = make_window()
    draft = model_folder / tiny_models.draft.name
    dialog = open_library(qtbot, window, draft)
    asked = []
    window.confirm = lambda title, text, action: asked.append(text) and False
    dialog.delete_button.click()
    entry = window.library.entry_for(str(draft))
    assert asked and entry.size_label in asked[0]
    assert draft.is_file() and window.library.row_of(str(draft)) >= 0  # answered no: nothing happened


def test_a_reload_asked_for_during_a_reply_waits_for_the_reply_to_end(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    fake_engine.reply = "one two three four five six seven eight nine ten"
    fake_engine.token_delay_s = 0.05
    window.composer.edit.setPlainText("count")
    with qtbot.waitSignal(window.engine_process.sig_stream, timeout=10000):  # the reply has begun
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    window.confirm = lambda *args: True
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=20000) as finished:
        window.apply_app_settings(dataclasses.replace(window.settings, kv_cache_type="q8_0"))
    assert window.store.get_message(finished.args[0]).content.strip() == fake_engine.reply  # whole, not cut
    qtbot.waitUntil(lambda: fake_engine.load_settings.get("kv_type") == "q8_0" and window.models_ready(), timeout=10000)


def test_the_model_settings_title_is_never_cut(make_window, model_folder, tiny_models):
    """Issue 45, Polish: the title held the file's name and was cut off; the sentence under it names the file."""
    from app.testing.synthetic import write_tiny_model

    target = str(write_tiny_model(model_folder / "qwen2.5-coder-1.5b-instruct-q4_k_m-with-a-long-name.gguf"))
    window = make_window()
    editor = window.model_actions.dialog_for(target)
    room = editor.minimumWidth() - 120  # the title bar's buttons and icon
    assert editor.fontMetrics().horizontalAdvance(editor.windowTitle()) < room
    assert window.library.entry_for(target).name in editor.findChildren(QLabel)[0].text()
