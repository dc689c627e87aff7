"""The keyboard, as a person who types uses it (issue 55, item 5): the cursor stays in the message box after Send
and Stop, a space never flips a switch that a click left focused, Esc stops a reply or clears the search, and F1
or Ctrl+/ lists every shortcut."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.ui.window_helpers import choose_pair, send_and_wait


def _ready(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    window.activateWindow()
    window.composer.setFocus()
    qtbot.waitUntil(window.composer.edit.hasFocus, timeout=2000)
    return window


def test_the_cursor_stays_in_the_message_box_after_send_and_stop(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    fake_engine.token_delay_s = 0.3  # long enough to press Stop
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    window.composer.edit.setPlainText("Tell me a long story")
    qtbot.mouseClick(window.composer.button, Qt.MouseButton.LeftButton)  # Send
    qtbot.waitUntil(window.composer.is_busy, timeout=5000)
    assert window.composer.edit.hasFocus()
    qtbot.mouseClick(window.composer.button, Qt.MouseButton.LeftButton)  # Stop
    qtbot.waitUntil(lambda: not window.composer.is_busy(), timeout=10000)
    assert window.composer.edit.hasFocus()
    qtbot.keyClicks(window.composer.edit, "next")
    assert window.composer.text() == "next"


def test_a_clicked_speculative_switch_does_not_take_the_next_space(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    switch = window.model_bar.speculative_switch
    before = switch.isChecked()
    qtbot.mouseClick(switch, Qt.MouseButton.LeftButton)
    assert switch.isChecked() != before
    focused = QApplication.focusWidget()
    assert focused is not switch
    if focused is not None:
        qtbot.keyClick(focused, Qt.Key.Key_Space)
    assert switch.isChecked() != before  # the space went elsewhere


def test_escape_stops_a_reply_wherever_the_focus_is(make_window, qtbot, fake_engine, model_folder, tiny_models):
    fake_engine.token_delay_s = 0.3
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    window.composer.edit.setPlainText("Tell me a long story")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(window.composer.is_busy, timeout=5000)
    elsewhere = window.model_bar.settings_button  # where a click or Tab may have left the focus
    elsewhere.setFocus()
    qtbot.waitUntil(elsewhere.hasFocus, timeout=2000)
    qtbot.keyClick(elsewhere, Qt.Key.Key_Escape)
    qtbot.waitUntil(lambda: not window.composer.is_busy(), timeout=10000)


def test_escape_clears_the_chat_search(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    send_and_wait(qtbot, window, "Hello")
    search = window.sidebar.search
    search.setFocus()
    qtbot.keyClicks(search, "zebra")
    qtbot.keyClick(search, Qt.Key.Key_Escape)
    assert search.text() == ""


def test_f1_and_ctrl_slash_list_every_shortcut(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    for key, modifier in (
        (Qt.Key.Key_F1, Qt.KeyboardModifier.NoModifier),
        (Qt.Key.Key_Slash, Qt.KeyboardModifier.ControlModifier),
    ):
        qtbot.keyClick(window.composer.edit, key, modifier)
        qtbot.waitUntil(lambda: window.shortcuts_sheet.isVisible(), timeout=2000)
        text = window.shortcuts_sheet.text()
        for expected in ("New chat", "Search chats", "Settings", "Stop the reply", "Rename chat", "Send", "Esc", "F1"):
            assert expected in text, expected
        window.shortcuts_sheet.close()
