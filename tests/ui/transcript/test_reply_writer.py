"""Storing a long reply never holds up the window, and nothing is lost or reordered for it (issue 23, class 8).

The store is slowed on purpose (each reply's save sleeps, as a 2 MB reply's save on a slow disk does), so the
window's behaviour while a save is under way can be seen. tests/perf/hostile_layout.py measures the stalls.
"""

from __future__ import annotations

import threading
import time

from PySide6.QtCore import Qt, QTimer

from app.store import ChatStore
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait

SLOW_SAVE_S = 0.6


def _slow_reply_saves(monkeypatch) -> threading.Event:
    """Every save of a reply sleeps first; the event is set while one is sleeping."""
    saving = threading.Event()
    add_message = ChatStore.add_message

    def slow_add(self, chat_id, role, content, **kwargs):
        if role == "assistant":
            saving.set()
            time.sleep(SLOW_SAVE_S)
            saving.clear()
        return add_message(self, chat_id, role, content, **kwargs)

    monkeypatch.setattr(ChatStore, "add_message", slow_add)
    return saving


def _ready(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    return window


def _send_until_the_reply_is_being_stored(qtbot, window, text: str, saving: threading.Event) -> None:
    """Send `text`; return once the reply has ended in the window and the writer is storing it."""
    window.composer.edit.setPlainText(text)
    with qtbot.waitSignal(window.conversation.sig_busy_changed, timeout=20000, check_params_cb=lambda busy: not busy):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(saving.is_set, timeout=5000)


def test_the_window_keeps_answering_while_a_reply_is_stored(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    saving = _slow_reply_saves(monkeypatch)
    fake_engine.reply = "A reply that takes a while to store."
    ticks_while_saving = []
    timer = QTimer()
    timer.setInterval(20)
    timer.timeout.connect(lambda: ticks_while_saving.append(1) if saving.is_set() else None)
    timer.start()
    try:
        message_id = send_and_wait(qtbot, window, "hello")
    finally:
        timer.stop()
    assert len(ticks_while_saving) >= 3, "the window's timers did not run while the reply was stored"
    assert window.store.get_message(message_id).content == "A reply that takes a while to store."
    assert "A reply that takes a while to store." in window.chat_view.toPlainText()


def test_a_message_sent_while_the_last_reply_is_stored_comes_after_it(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    saving = _slow_reply_saves(monkeypatch)
    fake_engine.reply = "First reply."
    _send_until_the_reply_is_being_stored(qtbot, window, "one", saving)
    fake_engine.reply = "Second reply."
    window.composer.edit.setPlainText("two")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)  # sent at once: the first reply is stored first

    def stored() -> list[tuple[str, str]]:
        return [(m.role, m.content) for m in window.store.messages(window.conversation.chat_id)]

    qtbot.waitUntil(lambda: len(stored()) == 4, timeout=20000)
    assert window.composer.edit.toPlainText() == ""
    assert stored() == [("user", "one"), ("assistant", "First reply."), ("user", "two"), ("assistant", "Second reply.")]


def test_closing_the_window_while_a_reply_is_stored_keeps_it(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    window = _ready(make_window, qtbot, fake_engine, model_folder, tiny_models)
    saving = _slow_reply_saves(monkeypatch)
    fake_engine.reply = "Kept across the close."
    _send_until_the_reply_is_being_stored(qtbot, window, "hello", saving)
    chat_id, path = window.conversation.chat_id, window.store.path
    window.close()
    with ChatStore(path) as store:
        assert [m.content for m in store.messages(chat_id)] == ["hello", "Kept across the close."]
