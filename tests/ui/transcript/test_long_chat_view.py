"""A long chat opens at its end, at once, and shows older messages as the user scrolls up."""

from __future__ import annotations

import pytest

from app.store import ChatStore
from app.ui.transcript.chat_pages import PAGE_MESSAGES


def _long_chat(n: int) -> int:
    with ChatStore() as store:
        chat = store.create_chat("long one")
        for i in range(n // 2):
            store.add_message(chat.id, "user", f"question number {i}")
            store.add_message(chat.id, "assistant", f"answer number {i}", tokens=[(f"answer number {i}", "draft")])
        return chat.id


@pytest.mark.slow
def test_a_thousand_message_chat_opens_at_its_end_and_loads_older_messages_on_scroll(make_window, qtbot):
    chat_id = _long_chat(1000)
    window = make_window()
    window.open_chat(chat_id)
    view = window.chat_view
    text = view.toPlainText()
    assert "answer number 499" in text and "question number 480" in text
    assert "question number 0\n" not in text  # not read, not rendered
    assert text.count("question number") == PAGE_MESSAGES // 2
    bar = view.verticalScrollBar()
    assert bar.value() == bar.maximum()  # at the newest message
    bar.setValue(bar.minimum())  # the user scrolls to the top
    qtbot.waitUntil(lambda: view.toPlainText().count("question number") == PAGE_MESSAGES, timeout=5000)
    text = view.toPlainText()
    # Older messages came in above, in order, and the reader is not thrown back to the end.
    assert text.index("question number 460") < text.index("question number 480") < text.index("answer number 499")
    assert bar.value() < bar.maximum()

    def scrolled_to_the_first_message() -> bool:
        bar.setValue(bar.minimum())  # the user keeps scrolling up while older pages come in
        return "question number 0\n" in view.toPlainText()

    qtbot.waitUntil(scrolled_to_the_first_message, timeout=30000)
    text = view.toPlainText()
    assert text.count("question number") == 500 and text.index("question number 0\n") < text.index("number 1\n")
    # Only the newest reply offers Regenerate, however the chat was loaded.
    assert text.count("Regenerate") == 1


def test_a_long_chat_says_once_per_cut_that_older_turns_were_left_out(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    from app.ui.models.library_model import NGRAM_KEY
    from tests.ui.window_helpers import choose_pair, send_and_wait

    fake_engine.reply = "fine " * 8
    window = make_window(engine_factory=fake_engine, context_size=600)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    window.update_chat_settings(max_tokens=16)
    for i in range(24):
        send_and_wait(qtbot, window, f"message {i} " + "word " * 20)
    prompts = [len(messages) for messages in fake_engine.requests]
    cuts = sum(1 for a, b in zip(prompts, prompts[1:]) if b < a)
    notices = window.chat_view.toPlainText().count("left out of the prompt")
    assert cuts >= 2
    assert notices == cuts  # one notice per cut, not one per reply
    assert notices < len(prompts) - prompts.index(max(prompts)) - 1
