"""A reply cannot trigger the app's actions (issue 23, class 1). The real window, with the scripted engine writing
replies that carry `specchat:` links of every action, and a user who clicks them."""

from __future__ import annotations

from PySide6.QtCore import Qt, QUrl
from PySide6.QtWidgets import QLabel, QMessageBox

from app.store.provenance import TokenRecord
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, click_link, send_and_wait


def _chat(window) -> list[tuple[str, str]]:
    return [(m.role, m.content) for m in window.store.messages(window.conversation.chat_id)]


def test_action_links_written_by_a_reply_do_nothing(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    told: list[str] = []
    monkeypatch.setattr(QMessageBox, "information", staticmethod(lambda *args: told.append(args[2])))
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    fake_engine.reply = "First answer."
    send_and_wait(qtbot, window, "first question")
    first_user, first_reply = (m.id for m in window.store.messages(window.conversation.chat_id))
    hostile = {
        "Copy": f"specchat:regenerate/{first_reply}",
        "Edit": f"specchat:edit/{first_user}",
        "Go on": f"specchat:continue/{first_reply}",
        "Compare": f"specchat:compare/{first_reply}",
        "Retry": "specchat:retry",
        "Inspect": f"specchat:inspect/{first_reply}",
        "Code": "specchat:copy-code/0",
    }
    fake_engine.reply = "Click: " + " ".join(f"[{label}]({href})" for label, href in hostile.items())
    send_and_wait(qtbot, window, "second question")
    before = _chat(window)
    requests = len(fake_engine.requests)
    window.confirm = lambda *args: (_ for _ in ()).throw(AssertionError("nothing destructive may be asked"))
    for label, href in hostile.items():
        click_link(qtbot, window.chat_view, label, href)
    assert _chat(window) == before  # nothing regenerated, edited or deleted
    assert len(fake_engine.requests) == requests  # nothing was sent to the engine
    assert not window.composer.is_editing() and window.composer.text() == ""
    assert window.inspector.shown_message_id() is None  # no inspector opened
    assert len(told) == len(hostile) and all("only web and mail links" in text for text in told)


def test_a_bad_action_target_is_ignored(make_window, qtbot, fake_engine, model_folder, tiny_models, qapp):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "write add()")
    qapp.clipboard().setText("kept")
    view = window.chat_view
    before = _chat(window)
    for href in (
        view.action_href("copy-code", 99999),
        view.action_href("copy-code", "-1"),
        view.action_href("copy-code", "x"),
        view.action_href("regenerate", "99999999999999999999"),
        view.action_href("edit", "nope"),
        view.action_href("no-such-action", 1),
        view.action_href("copy", 424242),
    ):
        view.anchorClicked.emit(QUrl(href))  # an exception in the slot would fail the test (pytest-qt)
    assert qapp.clipboard().text() == "kept"
    assert _chat(window) == before


def test_regenerate_and_edit_of_an_earlier_message_delete_nothing_and_ask_nothing(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    fake_engine.reply = "Answer."
    send_and_wait(qtbot, window, "first question")
    send_and_wait(qtbot, window, "second question")
    first_user, first_reply = (m.id for m in window.store.messages(window.conversation.chat_id)[:2])
    before = _chat(window)
    window.confirm = lambda *args: (_ for _ in ()).throw(AssertionError("asked"))
    fake_engine.reply = "Other answer."
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=20000) as blocker:
        window.chat_view.sig_regenerate.emit(first_reply)
    assert [c for _, c in _chat(window)] == ["first question", "Other answer."]
    # The later messages went with the first version, which the switcher brings back whole.
    assert window.versions.step(blocker.args[0], -1)
    assert _chat(window) == before
    window.chat_view.sig_edit_message.emit(first_user)
    assert window.composer.is_editing()


def test_text_from_a_server_or_file_is_never_markup_in_the_window(make_window, qtbot):
    window = make_window()
    hostile = '<a href="specchat:retry">Retry</a><img src="/etc/x.png"><b>fake</b>'
    window.show_error(f"The server said: {hostile}")
    assert window.error_banner.text().endswith(hostile)
    assert (
        window.error_banner.findChild(QLabel).textFormat() == Qt.TextFormat.PlainText
    )  # shown as the characters it is
    window.model_bar.set_load_state(hostile, state="failed")
    assert "&lt;a href" in window.model_bar.load_state.text()  # escaped inside the state's own markup


def test_a_very_long_link_is_asked_about_by_its_start(qtbot, monkeypatch):
    from app.ui.transcript.chat_view import ChatView, TranscriptMessage

    asked: list[str] = []
    monkeypatch.setattr(
        QMessageBox, "question", staticmethod(lambda *args: asked.append(args[2]) or QMessageBox.StandardButton.Cancel)
    )
    monkeypatch.setattr(QMessageBox, "information", staticmethod(lambda *args: asked.append(args[2])))
    view = ChatView()
    qtbot.addWidget(view)
    href = "https://example.com/" + "a" * 30_000
    text = f"[click]({href})"
    view.add_message(TranscriptMessage(1, "assistant", text, [TokenRecord(text, "target")]), is_last_reply=True)
    cursor = view.document().find("click")
    assert cursor.charFormat().isAnchor()
    view.anchorClicked.emit(QUrl(cursor.charFormat().anchorHref()))
    assert "https://example.com/aaa" in asked[0] and "more characters" in asked[0] and len(asked[0]) < 3000
