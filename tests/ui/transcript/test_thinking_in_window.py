"""A thinking model's reply in the real window: its reasoning streams into a Thinking section above the answer,
which is open while the model thinks and folds when the answer starts; the answer, Copy and the stored message hold
no markers, and drafted tokens are highlighted in both parts."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtWidgets import QApplication

from app.ui.transcript.format import PROVENANCE_PROPERTY
from tests.ui.window_helpers import choose_pair, click_link, send_and_wait

REASONING = "The user asks for a sum. I will write add and explain it briefly."
ANSWER = "Here is add:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\nIt returns the sum."


def _pair(model_folder: Path, tiny_models) -> tuple[Path, Path]:
    return model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name


def _origins_of(view, text: str) -> set[str]:
    """The origins of the characters of the first place `text` is shown in the transcript."""
    from PySide6.QtGui import QTextCursor

    found = view.document().find(text)
    assert not found.isNull(), f"{text!r} is not shown"
    origins = set()
    for position in range(found.selectionStart() + 1, found.selectionEnd() + 1):
        cursor = QTextCursor(view.document())
        cursor.setPosition(position)
        origin = cursor.charFormat().property(PROVENANCE_PROPERTY)
        if origin:
            origins.add(origin)
    return origins


def test_reasoning_streams_into_a_thinking_section_that_folds_when_the_answer_starts(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    fake_engine.reasoning = REASONING
    fake_engine.reply = ANSWER
    fake_engine.token_delay_s = 0.01
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, *_pair(model_folder, tiny_models))
    view = window.chat_view
    seen: list[str] = []
    original_answer_started = view.answer_started

    def answer_started(seconds, tokens):
        seen.append(view.toPlainText())  # the moment before it folds: the thinking is in view
        original_answer_started(seconds, tokens)
        seen.append(view.toPlainText())

    view.answer_started = answer_started
    stored = window.store.get_message(send_and_wait(qtbot, window, "Write add()"))
    # While it thought, the section was open and showed the reasoning; once the answer began, it folded.
    assert len(seen) == 2
    assert "Thinking…" in seen[0] and "I will write add" in seen[0]
    assert "I will write add" not in seen[1] and "Thought for" in seen[1]
    # The stored answer and its provenance hold no markers and no thinking; the thinking is stored apart.
    assert stored.content == ANSWER and stored.reasoning == REASONING
    assert "<think>" not in stored.content and "think>" not in "".join(t for t, _ in stored.tokens)
    assert "".join(t for t, _ in stored.reasoning_tokens) == REASONING
    # The finished reply shows the folded header with its figures; the answer is shown, the thinking is not.
    text = view.toPlainText()
    assert f"▸ Thought for 0.5 s · {len(stored.reasoning_tokens)} tokens" in text
    assert "It returns the sum." in text and "I will write add" not in text
    # Copy copies the answer alone.
    click_link(qtbot, view, "Copy", view.action_href("copy", stored.id))
    assert QApplication.clipboard().text().strip() == ANSWER.strip()
    # Opening the section shows the reasoning, highlighted by origin as the answer is.
    click_link(qtbot, view, "▸ Thought for", view.action_href("thinking", stored.id))
    qtbot.waitUntil(lambda: "I will write add" in view.toPlainText(), timeout=5000)
    assert "▾ Thought for" in view.toPlainText()
    assert "draft" in _origins_of(view, "I will write add") or "ngram" in _origins_of(view, "I will write add")
    assert {"draft", "target"} <= _origins_of(view, "It returns the sum.") | _origins_of(view, "def add")
    # And folding it again hides it.
    click_link(qtbot, view, "▾ Thought for", view.action_href("thinking", stored.id))
    qtbot.waitUntil(lambda: "I will write add" not in view.toPlainText(), timeout=5000)


def test_keep_thinking_open_leaves_the_section_open(make_window, qtbot, fake_engine, model_folder, tiny_models):
    fake_engine.reasoning = REASONING
    fake_engine.reply = ANSWER
    window = make_window(engine_factory=fake_engine)
    window.chat_view.set_keep_thinking_open(True)
    choose_pair(qtbot, window, *_pair(model_folder, tiny_models))
    send_and_wait(qtbot, window, "Write add()")
    text = window.chat_view.toPlainText()
    assert "▾ Thought for" in text and "I will write add" in text and "It returns the sum." in text


def test_a_reply_cut_off_while_thinking_says_so_is_kept_and_can_be_continued(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    fake_engine.reasoning = REASONING
    fake_engine.reply = ANSWER
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, *_pair(model_folder, tiny_models))
    window.chat_settings.update(max_tokens=5)
    stored = window.store.get_message(send_and_wait(qtbot, window, "Write add()"))
    # Never stored as an empty answer: the thinking so far is kept, and the reply says it has no answer yet.
    assert stored.content == "" and stored.reasoning and stored.stats.ended_in_reasoning
    text = window.chat_view.toPlainText()
    assert "Stopped while thinking: no answer yet" in text
    window.chat_settings.update(max_tokens=512)
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=30000):
        click_link(qtbot, window.chat_view, "Continue", window.chat_view.action_href("continue", stored.id))
    continued = window.store.get_message(stored.id)
    assert continued.reasoning.startswith(stored.reasoning) and continued.content


def test_a_reply_whose_model_ended_its_turn_inside_its_thinking_is_its_answer(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    """The model wrote its end-of-turn token before `</think>` (issue 45, item 2): nobody stopped it, so it is not
    said to have been stopped, and what it wrote is the answer: shown, copied and sent in the next turn."""
    fake_engine.reasoning = "221 is 13 times 17, so it is not prime."
    fake_engine.reply = ""
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, *_pair(model_folder, tiny_models))
    view = window.chat_view
    stored = window.store.get_message(send_and_wait(qtbot, window, "Is 221 prime?"))
    assert stored.content == "221 is 13 times 17, so it is not prime." and stored.reasoning == ""
    text = view.toPlainText()
    assert "Stopped while thinking" not in text and "Continue" not in text
    assert "221 is 13 times 17, so it is not prime." in text and "Thought for" not in text
    assert "ended its turn without closing its thinking" in text
    QApplication.clipboard().clear()
    click_link(qtbot, view, "Copy", view.action_href("copy", stored.id))
    assert QApplication.clipboard().text() == "221 is 13 times 17, so it is not prime."
    fake_engine.reasoning, fake_engine.reply = "", "Yes, 223 is prime."
    send_and_wait(qtbot, window, "And 223?")
    assert fake_engine.requests[-1][-2] == {"role": "assistant", "content": "221 is 13 times 17, so it is not prime."}


def test_a_reply_stopped_mid_thought_offers_continue_only_where_it_can(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    fake_engine.reasoning = REASONING
    fake_engine.reply = ANSWER
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, *_pair(model_folder, tiny_models))
    window.chat_settings.update(max_tokens=5)
    send_and_wait(qtbot, window, "Write add()")
    assert "Stopped while thinking: no answer yet. Continue lets it go on." in window.chat_view.toPlainText()
    window.chat_settings.update(max_tokens=512)
    fake_engine.reasoning = ""
    send_and_wait(qtbot, window, "Just the answer, please.")
    # The earlier reply is no longer the last: it has no Continue, and does not promise one.
    text = window.chat_view.toPlainText()
    assert "Stopped while thinking: no answer yet." in text and "Continue lets it go on" not in text
