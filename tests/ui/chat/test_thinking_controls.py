"""Each chat's Thinking controls, and each model file's thinking markers, reach the request the engine gets."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QDialog, QDialogButtonBox

from app.library import inspect_entry
from app.store import AppSettings, ChatSettings, load_settings
from app.testing.synthetic import write_tiny_model
from app.ui.settings.chat_dialog import ChatSettingsDialog
from app.ui.settings.dialog import AppSettingsDialog
from app.ui.settings.thinking_group import TemplateSwitches

TEMPLATES = Path(__file__).parents[2] / "fixtures" / "chat_templates"


def _model_with_template(path: Path, template: str) -> Path:
    return write_tiny_model(path, n_layer=2, edit=lambda writer: writer.add_chat_template(template))


def test_the_library_tells_which_templates_have_a_thinking_switch_or_an_effort(tmp_path):
    qwen3 = inspect_entry(_model_with_template(tmp_path / "qwen3.gguf", (TEMPLATES / "qwen3.jinja").read_text()))
    gpt_oss = inspect_entry(_model_with_template(tmp_path / "oss.gguf", (TEMPLATES / "gpt-oss.jinja").read_text()))
    chatml = inspect_entry(write_tiny_model(tmp_path / "chatml.gguf", n_layer=2))
    assert (qwen3.thinking_switch, qwen3.effort_switch) == (True, False)
    assert (gpt_oss.thinking_switch, gpt_oss.effort_switch) == (False, True)
    assert (chatml.thinking_switch, chatml.effort_switch) == (False, False)


def test_the_thinking_group_offers_what_the_template_reads(qtbot):
    dialog = ChatSettingsDialog(
        ChatSettings(thinking=None, reasoning_effort="", thinking_budget=0),
        None,
        TemplateSwitches(thinking=True, effort=False, model_path="/m/q.gguf", model_name="q"),
    )
    qtbot.addWidget(dialog)
    group = dialog.thinking
    assert group.title() == "Thinking" and group.thinking.isEnabled() and not group.effort.isEnabled()
    assert "no switch" in group.effort.toolTip()
    assert group.budget.text() == "Off"  # off by default
    group.thinking.setCurrentIndex(group.thinking.findText("Off"))
    group.budget.setValue(32)
    settings = dialog.settings()
    assert (settings.thinking, settings.reasoning_effort, settings.thinking_budget) == (False, "", 32)
    # Markers: both or neither; one alone keeps the dialog open and says why.
    group.start_marker.setText("[THINK]")
    dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok).click()
    assert dialog.result() != QDialog.DialogCode.Accepted and "both markers" in group.problem.text()
    group.end_marker.setText("[/THINK]")
    assert dialog.markers() == ("[THINK]", "[/THINK]")
    unknown = ChatSettingsDialog(ChatSettings(reasoning_effort="high"))  # a server's model: nothing known
    qtbot.addWidget(unknown)
    assert (
        unknown.thinking.thinking.isEnabled()
        and "Only models whose chat template" in unknown.thinking.thinking.toolTip()
    )
    assert unknown.thinking.effort.currentData() == "high" and not unknown.thinking.start_marker.isEnabled()


def test_keep_thinking_open_is_an_app_setting(qtbot, tmp_path):
    dialog = AppSettingsDialog(AppSettings())
    qtbot.addWidget(dialog)
    assert not dialog.keep_thinking_open.isChecked()
    dialog.keep_thinking_open.setChecked(True)
    assert dialog.settings().keep_thinking_open


def test_chat_settings_and_model_markers_reach_the_request(make_window, qtbot, fake_engine, model_folder, monkeypatch):
    from tests.ui.window_helpers import choose_pair
    from app.ui.models.library_model import NGRAM_KEY

    target = _model_with_template(model_folder / "thinker.gguf", (TEMPLATES / "qwen3.jinja").read_text())
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, target, NGRAM_KEY)
    config = window.generation_config()
    assert (config.thinking, config.reasoning_effort, config.thinking_budget, config.reasoning_markers) == (
        None,
        "",
        0,
        (),
    )  # a chat leaves thinking to the model until told

    shown = []

    def accept(dialog):
        shown.append((dialog.thinking.thinking.isEnabled(), dialog.thinking.effort.isEnabled()))
        dialog.thinking.thinking.setCurrentIndex(dialog.thinking.thinking.findText("Off"))
        dialog.thinking.budget.setValue(64)
        dialog.thinking.start_marker.setText("<reasoning>")
        dialog.thinking.end_marker.setText("</reasoning>")
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(ChatSettingsDialog, "exec", accept)
    window.chat_settings.edit()
    assert shown == [(True, False)]  # Qwen3's template reads enable_thinking, not reasoning_effort
    config = window.generation_config()
    assert (config.thinking, config.thinking_budget) == (False, 64)
    assert config.reasoning_markers == ("<reasoning>", "</reasoning>")
    assert load_settings().reasoning_markers == {str(target): ["<reasoning>", "</reasoning>"]}  # saved at once
    # The markers belong to the model file: a new chat on it has them, and the chat's own choices start afresh.
    window.new_chat()
    config = window.generation_config()
    assert config.reasoning_markers == ("<reasoning>", "</reasoning>") and config.thinking is None
