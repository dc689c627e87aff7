"""A reply the store cannot take as it is never loses the reply or wedges the window (issue 23, class 2)."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.store import ChatStore, StoreError
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, click_link, send_and_wait


def _ready(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    return window


def _refuse_replies(monkeypatch, error: Exception) -> None:
    """Every connection to the database (the window's, and the reply saver's on its own thread) takes the user's
    messages but raises `error` for every reply."""
    add_message = ChatStore.add_message

    def add(self, chat_id, role, content, **kwargs):
        if role == "assistant":
            raise error
        return add_message(self, chat_id, role, content, **kwargs)

    def update(*args, **kwargs):
        raise error

    monkeypatch.setattr(ChatStore, "add_message", add)
    monkeypatch.setattr(ChatStore, "update_reply", update)


def test_a_lone_surrogate_in_a_reply_is_saved_and_the_window_stays_usable(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path
):
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    fake_engine.reply = "Broken \ud800 character, and a split pair \ud83d\ude00 too."
    message_id = send_and_wait(qtbot, window, "say something odd")
    stored = window.store.get_message(message_id)
    assert stored.content == "Broken \ufffd character, and a split pair \U0001f600 too."
    assert "Broken" in window.chat_view.toPlainText() and "character" in window.chat_view.toPlainText()
    assert not window.conversation.is_busy() and not window.composer.is_busy()
    for name in ("chat.md", "chat.json"):  # exportable, in both formats
        assert window.chat_export.write(window.conversation.chat_id, str(tmp_path / name))
        assert "character, and a split pair" in (tmp_path / name).read_text(encoding="utf-8")
    fake_engine.reply = "Fine again."
    send_and_wait(qtbot, window, "next")  # the next message is sent and answered
    assert window.store.messages(window.conversation.chat_id)[-1].content == "Fine again."


def test_a_failed_save_keeps_the_reply_shown_copyable_and_the_window_idle(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch, qapp
):
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    send_and_wait(qtbot, window, "first")  # the chat exists; now the disk fails
    fake_engine.reply = "A reply the disk will not take."
    _refuse_replies(monkeypatch, StoreError("the disk is full"))
    window.composer.edit.setPlainText("second")
    with qtbot.waitSignal(window.conversation.sig_busy_changed, timeout=20000, check_params_cb=lambda busy: not busy):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert not window.composer.is_busy()
    qtbot.waitUntil(lambda: "could not be saved" in window.error_banner.text(), timeout=20000)  # the writer's answer
    assert "A reply the disk will not take." in window.chat_view.toPlainText()
    banner = window.error_banner.text()
    assert "could not be saved" in banner and "the disk is full" in banner
    key = next(iter(window.conversation.display.unsaved_replies))
    click_link(qtbot, window.chat_view, "Copy", window.chat_view.action_href("copy", key))
    assert qapp.clipboard().text() == "A reply the disk will not take."


def test_a_refused_token_record_never_wedges_the_window(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    send_and_wait(qtbot, window, "first")
    fake_engine.reply = "Second reply."
    _refuse_replies(monkeypatch, ValueError("a token's origin is unknown"))
    window.composer.edit.setPlainText("second")
    with qtbot.waitSignal(window.conversation.sig_busy_changed, timeout=20000, check_params_cb=lambda busy: not busy):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert not window.composer.is_busy() and not window.conversation.is_busy()
    qtbot.waitUntil(lambda: "could not be saved" in window.error_banner.text(), timeout=20000)
    assert "Second reply." in window.chat_view.toPlainText()
