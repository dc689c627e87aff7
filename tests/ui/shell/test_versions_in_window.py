"""Branches in the window: Regenerate and Edit keep every version, "‹ 2/3 ›" moves between them by mouse and by
keyboard, the chat opens on the version last shown, and the model is sent the current branch only."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.ui.models.library_model import NGRAM_KEY
from app.ui.transcript.message_actions import find_link
from app.ui.transcript.message_meta import NEXT_VERSION, PREVIOUS_VERSION
from tests.ui.window_helpers import choose_pair, click_link, send_and_wait


def _shown(window) -> list[str]:
    return [m.content for m in window.store.messages(window.conversation.chat_id)]


def _transcript(window) -> str:
    return window.chat_view.toPlainText()


def test_regenerate_keeps_the_first_reply_as_version_one_of_two(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    fake_engine.reply = "First answer."
    first = send_and_wait(qtbot, window, "question")
    fake_engine.reply = "Second answer."
    view = window.chat_view
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=20000) as blocker:
        click_link(qtbot, view, "Regenerate", view.action_href("regenerate", first))
    second = blocker.args[0]
    assert "2/2" in _transcript(window) and "Second answer." in _transcript(window)
    # Each message says when it was written, and a question its length.
    assert "You  ·  just now  ·  8 characters" in _transcript(window)
    assert "First answer." not in _transcript(window)
    # A regenerated reply is asked for with a fresh seed, and sampled even where the chat is greedy.
    config = fake_engine.configs[-1]
    assert config["seed"] is not None and config["temperature"] > 0

    click_link(qtbot, view, " ‹ ", view.action_href(PREVIOUS_VERSION, second))
    qtbot.waitUntil(lambda: "First answer." in _transcript(window), timeout=5000)
    assert "1/2" in _transcript(window) and "Second answer." not in _transcript(window)
    assert _shown(window) == ["question", "First answer."]

    # The keyboard does the same for the newest message with versions.
    window.chat_view.setFocus()
    qtbot.keyClick(window, Qt.Key.Key_Right, Qt.KeyboardModifier.AltModifier)
    qtbot.waitUntil(lambda: "Second answer." in _transcript(window), timeout=5000)
    assert _shown(window) == ["question", "Second answer."]

    # The chat remembers the version shown: reopened, it shows it again.
    chat_id = window.conversation.chat_id
    window.new_chat()
    window.open_chat(chat_id)
    assert "Second answer." in _transcript(window) and "2/2" in _transcript(window)


def test_an_edit_makes_a_version_and_the_model_gets_the_current_branch_only(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    fake_engine.reply = "Paris."
    send_and_wait(qtbot, window, "capital of France?")
    send_and_wait(qtbot, window, "and of Italy?")
    italy = window.store.messages(window.conversation.chat_id)[2]
    view = window.chat_view
    click_link(qtbot, view, "Edit", view.action_href("edit", italy.id))
    assert window.composer.is_editing()
    fake_engine.reply = "Madrid."
    send_and_wait(qtbot, window, "and of Spain?")
    assert _shown(window) == ["capital of France?", "Paris.", "and of Spain?", "Madrid."]
    sent = [m["content"] for m in fake_engine.requests[-1] if m["role"] != "system"]
    assert sent == ["capital of France?", "Paris.", "and of Spain?"]  # never the question it replaced
    assert "2/2" in _transcript(window)

    edited = window.store.messages(window.conversation.chat_id)[2]
    click_link(qtbot, view, " ‹ ", view.action_href(PREVIOUS_VERSION, edited.id))
    qtbot.waitUntil(lambda: "and of Italy?" in _transcript(window), timeout=5000)
    assert _shown(window) == ["capital of France?", "Paris.", "and of Italy?", "Paris."]
    # Carrying on from the old version sends that version, not the edited one.
    fake_engine.reply = "Rome."
    send_and_wait(qtbot, window, "sure?")
    sent = [m["content"] for m in fake_engine.requests[-1] if m["role"] != "system"]
    assert sent == ["capital of France?", "Paris.", "and of Italy?", "Paris.", "sure?"]
    assert find_link(view.document(), " › ", view.action_href(NEXT_VERSION, italy.id)) is not None


def test_a_time_reads_relative_today_and_as_a_date_before():
    import datetime

    from app.ui.transcript.message_meta import when_text, when_tooltip

    noon = datetime.datetime(2026, 12, 2, 12, 0).timestamp()
    assert when_text(noon - 20, noon) == "just now"
    assert when_text(noon - 12 * 60, noon) == "12 min ago"
    assert when_text(noon - 3 * 3600, noon) == "3 h ago"
    assert when_text(noon - 86400, noon) == "1 Dec"
    assert when_text(noon - 400 * 86400, noon).endswith("2025")
    assert when_tooltip(noon) == "Written Wednesday 2 December 2026, 12:00:00"
