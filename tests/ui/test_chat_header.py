"""Issue 36: each chat says which model writes it and how it speculates, and opening a chat written with another
model asks before loading it: that model also answers the local API, which must never change silently."""

from __future__ import annotations

import socket

from app.store import ChatSettings
from tests.serve.api_fixtures import DEADLINE_S
from window_helpers import choose_pair


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_opening_a_chat_with_another_model_asks_first_and_keeps_the_apis_model(make_window, qtbot, model_folder,
                                                                              tiny_models):
    window = make_window(api_server=True, api_port=_free_port())
    target = str(model_folder / tiny_models.target.name)
    other = str(model_folder / tiny_models.draft_identical.name)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    control = window.api_server
    qtbot.waitUntil(lambda: bool(control.state.url), timeout=int(DEADLINE_S * 1000))
    assert "answers with tiny-target" in control.indicator.text()
    header = window.chat_header.header
    assert header.summary.text() == "tiny-target · speculative, drafts by tiny-draft"

    chat = window.store.create_chat("Written with the other model", ChatSettings(target_path=other,
                                                                                speculative=False))
    window.chat_lists.refresh()
    window.open_chat(chat.id)
    # Asked, not loaded: the bar, the session and the API still have the loaded model.
    assert not header.question.isHidden()
    assert header.question_text.text() == (
        "This chat was written with tiny-draft-identical, but tiny-target is loaded (it also answers the local "
        "API). Load tiny-draft-identical for this chat, or go on with tiny-target?")
    assert window.session.target_key() == target and window.model_bar.current_target() == target
    assert "answers with tiny-target" in control.indicator.text()
    assert header.summary.text() == "tiny-draft-identical · plain decoding (no speculation)"

    header.keep_button.click()  # go on with the loaded one: the chat now says so
    assert header.question.isHidden() and window.session.target_key() == target
    assert window.store.get_chat(chat.id).settings.target_path == target
    assert header.summary.text() == "tiny-target · plain decoding (no speculation)"

    second = window.store.create_chat("Also the other model", ChatSettings(target_path=other))
    window.chat_lists.refresh()
    window.open_chat(second.id)
    assert not header.question.isHidden()
    header.load_button.click()  # load it: only now does the API answer with it
    qtbot.waitUntil(lambda: window.models_ready() and window.session.target_key() == other, timeout=20000)
    qtbot.waitUntil(lambda: "answers with tiny-draft-identical" in control.indicator.text(), timeout=10000)
    assert header.question.isHidden()


def test_a_new_chats_header_names_the_draft_the_bar_shows(make_window, qtbot, fake_engine, model_folder,
                                                           tiny_models):
    from app.ui.models.library_model import NGRAM_KEY

    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    assert window.conversation.chat_id is None
    assert window.chat_header.header.summary.text() == "tiny-target · speculative, drafts by tiny-draft"
    window.choose_draft(NGRAM_KEY)
    qtbot.waitUntil(lambda: "n-gram" in window.chat_header.header.summary.text(), timeout=5000)
