"""What a new user notices first: Ctrl+Q quits, the app reopens the chat that was open, and the pickers show
whole model names."""

from __future__ import annotations

import shutil

from PySide6.QtCore import Qt

from app.store import ChatStore, load_settings
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait


def test_ctrl_q_closes_the_window_and_stops_the_engine(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    assert window.engine_process.is_running()
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Q, Qt.KeyboardModifier.ControlModifier)
    assert not window.isVisible()
    assert not window.engine_process.is_running()


def test_the_app_starts_on_the_chat_that_was_open(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "first chat")
    window.new_chat()
    send_and_wait(qtbot, window, "second chat")
    first = window.chat_list.chat_at(1)
    window.open_chat(first.id)
    window.close()
    assert load_settings().last_chat_id == first.id

    # make_window writes the settings afresh: carry over what the closed window saved.
    again = make_window(engine_factory=fake_engine, last_chat_id=load_settings().last_chat_id)
    assert again.conversation.chat_id == first.id
    assert "first chat" in again.chat_view.toPlainText()
    assert again.windowTitle().startswith(first.title)
    # The chat drafts by n-gram lookup, stored as such, and reopens with that drafter chosen.
    assert again.store.get_chat(first.id).settings.draft_ngram
    qtbot.waitUntil(again.models_ready, timeout=20000)
    assert again.model_bar.current_draft() == NGRAM_KEY


def test_a_deleted_last_chat_opens_a_new_chat_instead(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "soon gone")
    chat_id = window.conversation.chat_id
    window.close()
    assert load_settings().last_chat_id == chat_id
    store = ChatStore()
    store.delete_chat(chat_id)
    store.close()
    again = make_window(engine_factory=fake_engine, last_chat_id=chat_id)
    assert again.conversation.chat_id is None
    assert "soon gone" not in again.chat_view.toPlainText()


def test_the_pickers_show_whole_model_names(make_window, qtbot, fake_engine, model_folder, tiny_models):
    name = "qwen2.5-coder-1.5b-instruct-q4_k_m"
    shutil.copy2(model_folder / tiny_models.target.name, model_folder / f"{name}.gguf")
    window = make_window(engine_factory=fake_engine)
    window.choose_target(str(model_folder / f"{name}.gguf"))
    qtbot.waitUntil(lambda: not window.drafts.is_checking(), timeout=10000)
    combo = window.model_bar.target_combo
    assert combo.currentText() == name
    # Room for the whole name and the arrow, with the window at its usual size.
    qtbot.waitUntil(lambda: combo.width() > combo.fontMetrics().horizontalAdvance(name) + 20, timeout=2000)


def test_the_sidebar_says_no_chats_only_while_there_are_none(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    window.show()
    empty = window.sidebar.empty_label
    assert empty.isVisible() and empty.text() == "No chats yet"
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "the first chat")
    assert not empty.isVisible()
    window.confirm = lambda *args: True
    window.delete_chat(window.conversation.chat_id)
    assert empty.isVisible()
