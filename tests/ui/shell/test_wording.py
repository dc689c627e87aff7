"""Words that say what the window does (issue 45, item 11): the Edit banner keeps the old version, Chat settings
calls a chat without a preset as the header does, and the Thinking boxes are off where the model ignores them."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog

from app.ui.settings.chat_presets import NO_PRESET
from app.ui.settings.chat_dialog import ChatSettingsDialog
from tests.ui.window_helpers import choose_pair, send_and_wait


def test_the_edit_banner_says_the_old_version_is_kept(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    question = window.store.get_message(send_and_wait(qtbot, window, "Write add()"))
    user_id = window.store.messages(question.chat_id)[0].id
    window.messages.edit_message(user_id)
    assert window.composer.edit_banner.isVisible()
    banner = window.composer.edit_banner.text()
    assert "every later message" not in banner and "kept" in banner


def test_chat_settings_of_a_new_chat_say_no_preset_and_offer_only_what_the_template_reads(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    seen = []

    def look(dialog):
        seen.append(
            (dialog.preset.currentText(), dialog.thinking.thinking.isEnabled(), dialog.thinking.effort.isEnabled())
        )
        return QDialog.DialogCode.Rejected

    monkeypatch.setattr(ChatSettingsDialog, "exec", look)
    window.chat_settings.edit()
    # The tiny target's template (ChatML) reads neither enable_thinking nor reasoning_effort.
    assert seen == [(NO_PRESET, False, False)]
    assert window.chat_header.header.preset.currentText() == NO_PRESET
