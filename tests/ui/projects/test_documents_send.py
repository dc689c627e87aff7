"""Send in a chat of a project with documents, as a person sees it: the question's sources are found off the GUI
thread, so the window goes on answering meanwhile; the composer keeps the text with a Stop button until the message
is really sent, and a second Send does nothing. Stop, or another chat, drops the waiting Send, its text kept in the
composer, and what is found for it later is never sent. A search that fails says why in a sentence, and the
question goes without sources."""

from __future__ import annotations

import threading
from pathlib import Path

from PySide6.QtCore import Qt, QTimer

from app.ui.projects import question_sources
from app.ui.projects.documents import FIND_FAILED, FINDING_TEXT
from tests.ui.window_helpers import poppies_chat, send_and_wait

QUESTION = "When do blue poppies bloom?"
GATE_DEADLINE_S = 20.0  # a held search goes on by itself after this, whatever the test does
WAIT_MS = 30_000


class Gate:
    """Holds every search for sources (on the question's thread) while shut; `entered` says one is being held."""

    def __init__(self, monkeypatch, shut: bool = True):
        self.entered = threading.Event()
        self.open = threading.Event()
        if not shut:
            self.open.set()
        real = question_sources.whole_documents

        def held(files, budget):
            self.entered.set()
            self.open.wait(GATE_DEADLINE_S)
            return real(files, budget)

        monkeypatch.setattr(question_sources, "whole_documents", held)


def _press_send(qtbot, window, text: str) -> None:
    window.composer.edit.setPlainText(text)
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)


def _questions(window, chat_id) -> list[str]:
    return [m.content for m in window.store.messages(chat_id) if m.role == "user"] if chat_id is not None else []


def _events_run(qtbot) -> None:
    """The GUI thread runs its event loop: a timer set now fires."""
    fired: list[bool] = []
    QTimer.singleShot(0, lambda: fired.append(True))
    qtbot.waitUntil(lambda: bool(fired), timeout=5000)


def test_the_window_answers_while_a_questions_sources_are_found(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path, monkeypatch
):
    window, _ = poppies_chat(make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path)
    gate = Gate(monkeypatch)
    composer, asked_before = window.composer, len(fake_engine.requests)
    _press_send(qtbot, window, QUESTION)
    qtbot.waitUntil(gate.entered.is_set, timeout=WAIT_MS)

    # Held on the question's thread: the window runs, shows the wait, and keeps the text; nothing is sent yet.
    _events_run(qtbot)
    assert composer.button.text() == "Stop" and composer.text() == QUESTION and composer.edit.isReadOnly()
    assert window.legend_row.live_stats.text() == FINDING_TEXT
    assert window.conversation.chat_id is None and len(fake_engine.requests) == asked_before

    # A second Send while it waits does nothing.
    qtbot.keyClick(composer.edit, Qt.Key.Key_Return)
    assert window.send_message(QUESTION) is False

    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=WAIT_MS):
        gate.open.set()
    # Sent once, with its document whole, and the composer is empty for the next message.
    chat_id = window.conversation.chat_id
    assert _questions(window, chat_id) == [QUESTION]
    assert [Path(s.path).name for s in window.store.messages(chat_id)[0].sources] == ["poppies.md"]
    assert len(fake_engine.requests) == asked_before + 1 and "late June" in fake_engine.requests[-1][-1]["content"]
    assert "Documents, whole: poppies.md" in window.chat_view.toPlainText()
    assert composer.text() == "" and composer.button.text() == "Send" and not composer.edit.isReadOnly()


def test_stop_or_another_chat_drops_the_waiting_send_and_keeps_its_text(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path, monkeypatch
):
    window, project = poppies_chat(make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path)
    gate = Gate(monkeypatch, shut=False)
    send_and_wait(qtbot, window, "Where do they grow?")
    first_chat, asked_before = window.conversation.chat_id, len(fake_engine.requests)
    composer = window.composer

    # Stop while the sources are found: the text stays, editable, and Send is offered again.
    gate.open.clear()
    _press_send(qtbot, window, QUESTION)
    qtbot.waitUntil(gate.entered.is_set, timeout=WAIT_MS)
    composer.button.click()
    assert composer.text() == QUESTION and composer.button.text() == "Send" and not composer.edit.isReadOnly()
    assert window.legend_row.live_stats.text() == ""

    # Sent again, then another chat of the project opened while it waits: the text comes along, unsent.
    qtbot.keyClick(composer.edit, Qt.Key.Key_Return)
    assert composer.button.text() == "Stop"
    window.projects.new_chat_in(project.id)
    assert composer.text() == QUESTION and composer.button.text() == "Send"

    # Sent from there: the searches dropped before it end first (one thread, in order), so once its reply is in,
    # any of them that was going to be sent would have been.
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=WAIT_MS):
        gate.open.set()
        qtbot.keyClick(composer.edit, Qt.Key.Key_Return)
    assert _questions(window, first_chat) == ["Where do they grow?"]
    assert _questions(window, window.conversation.chat_id) == [QUESTION]
    assert len(fake_engine.requests) == asked_before + 1


def test_a_search_that_fails_says_why_and_the_question_goes_without_sources(
    make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path, monkeypatch
):
    window, _ = poppies_chat(make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path)

    def broken(*args, **kwargs):
        raise OSError("the disk went away")

    monkeypatch.setattr(question_sources, "find_documents", broken)
    send_and_wait(qtbot, window, QUESTION)
    assert window.error_banner.text() == f"{FIND_FAILED} the disk went away"
    question = window.store.messages(window.conversation.chat_id)[0]
    assert question.content == QUESTION and question.sources == ()
    assert window.composer.text() == "" and window.composer.button.text() == "Send"
