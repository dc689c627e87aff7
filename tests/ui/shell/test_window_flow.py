"""The window's behaviour with a scripted engine: streaming, stop, stale events, context trimming, editing, chats.

The library and compatibility checks are real (synthetic GGUF files); only generation is scripted, so timing
(a reply slow enough to stop midway) is under the test's control.
"""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt

from app.engine.events import ContextEvent, FinishedEvent, GenerationStats, NoticeEvent, RoundEvent, TokenEvent
from app.engine.host.wire import ReplyEnded, ReplyFailed
from app.store import load_settings
from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait


def _draft_path(folder: Path, tiny_models) -> Path:
    return folder / tiny_models.draft.name


def _feed_late_events(window, request_id: int) -> None:
    """What the engine may still send for a request the window has retired: every kind of event, at once."""
    engine = window.engine_process
    engine.sig_context.emit(ContextEvent(request_id, 0, 10, 2048))
    engine.sig_notice.emit(NoticeEvent(request_id, "LATE NOTICE"))
    engine.sig_stream.emit(
        [
            TokenEvent(request_id, 9999, 1, " LATE-TOKEN", "draft"),
            RoundEvent(request_id, "ngram", 4, 4, 4, "LATE REASON"),
        ]
    )
    engine.sig_finished.emit(FinishedEvent(request_id, "LATE REPLY", GenerationStats(tokens=1)))
    engine.sig_generation_failed.emit(ReplyFailed(request_id, "LATE FAILURE"))
    engine.sig_generation_ended.emit(ReplyEnded(request_id))


def test_first_run_with_an_empty_library_explains_how_to_add_models(make_window, qtbot, tmp_path):
    window = make_window(folders=[])
    assert window.pages.currentWidget() is window.empty_page
    body = window.empty_page.body.text()
    assert "folder" in body and ".gguf" in body and "download" in body.lower()
    # Typing and sending anyway: a clear message, and the text stays in the composer.
    window.composer.edit.setPlainText("hello?")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert window.error_banner.isVisible()
    assert "no model" in window.error_banner.text().lower()
    assert window.composer.text() == "hello?"


def test_adding_a_folder_fills_the_library_and_shows_the_chat(make_window, qtbot, model_folder):
    window = make_window(folders=[])
    window.add_model_folder(str(model_folder))
    qtbot.waitUntil(lambda: bool(window.library.usable_entries()), timeout=10000)
    assert window.pages.currentIndex() == 0
    assert load_settings().model_folders == [str(model_folder)]


def test_an_empty_chat_asks_for_a_model_until_one_is_chosen(make_window, qtbot, model_folder, tiny_models):
    """Issue 55, item 6: after adding a folder, "Start a conversation" showed while no model was chosen."""
    window = make_window(folders=[])
    window.add_model_folder(str(model_folder))
    qtbot.waitUntil(lambda: bool(window.library.usable_entries()), timeout=10000)
    assert window.session.target is None
    shown = window.chat_view.toPlainText()
    assert "Choose a model to start" in shown and "Start a conversation" not in shown
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    assert "Start a conversation" in window.chat_view.toPlainText()


def test_send_streams_highlighted_draft_tokens_and_stores_them(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, _draft_path(model_folder, tiny_models))
    message_id = send_and_wait(qtbot, window, "Write add()")
    assert window.composer.text() == ""
    assert "def add(a, b):" in window.chat_view.toPlainText()
    assert window.chat_view.highlighted_text()  # accepted draft tokens are green
    stored = window.store.get_message(message_id)
    assert stored.tokens and any(source == "draft" for _, source in stored.tokens)
    assert stored.stats.drafted > 0
    assert stored.draft_name == "tiny-draft"
    # The chat got its title from the first message and is first in the sidebar.
    assert window.chat_list.chat_at(0).title == "Write add()"


def test_speculative_switch_applies_to_next_message_without_reloading(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, _draft_path(model_folder, tiny_models))
    send_and_wait(qtbot, window, "first")
    engine = fake_engine
    loads = engine.loads
    window.model_bar.speculative_switch.click()
    assert not window.model_bar.speculative()
    before = window.chat_view.highlighted_text()
    send_and_wait(qtbot, window, "second")
    assert engine.configs[-1]["speculative"] is False
    assert engine.loads == loads
    assert window.chat_view.highlighted_text() == before  # the new reply adds no highlighted span
    chat = window.store.get_chat(window.conversation.chat_id)
    assert chat.settings.speculative is False


def test_a_new_chat_starts_speculative_after_a_chat_with_speculation_off(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    """Issue 55, item 6: a new chat inherited "speculation off" from the last one, unnoticed."""
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, _draft_path(model_folder, tiny_models))
    window.model_bar.speculative_switch.click()
    send_and_wait(qtbot, window, "first")
    window.new_chat()
    assert window.model_bar.speculative()
    send_and_wait(qtbot, window, "second")
    assert fake_engine.configs[-1]["speculative"] is True


def test_stop_keeps_the_partial_reply_and_drops_late_tokens(make_window, qtbot, fake_engine, model_folder, tiny_models):
    fake_engine.token_delay_s = 0.03
    fake_engine.reply = " ".join(f"word{i}" for i in range(200))
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, _draft_path(model_folder, tiny_models))
    window.composer.edit.setPlainText("long answer please")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "word5" in window.chat_view.streamed_text(), timeout=10000)
    assert window.composer.button.text() == "Stop"
    stopped_request = window.conversation.active_request_id()
    with qtbot.waitSignal(window.conversation.sig_reply_finished) as blocker:
        window.composer.button.click()
    assert not window.conversation.is_busy()
    assert window.composer.button.text() == "Send"
    shown = window.chat_view.toPlainText()
    messages = window.store.messages(window.conversation.chat_id)
    # The engine may still send events of the stopped request; none may show or be stored.
    _feed_late_events(window, stopped_request)
    assert window.chat_view.toPlainText() == shown
    assert window.store.messages(window.conversation.chat_id) == messages
    assert not window.conversation.is_busy() and not window.error_banner.isVisible()
    stored = window.store.get_message(blocker.args[0])
    assert stored.stats.stop_reason == "cancelled"
    assert stored.content and "word199" not in stored.content
    assert stored.content.split()[-1] in shown
    assert "stopped" in shown


def test_regenerate_supersedes_the_streaming_request(make_window, qtbot, fake_engine, model_folder, tiny_models):
    fake_engine.token_delay_s = 0.02
    fake_engine.reply = " ".join(f"w{i}" for i in range(60))
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, _draft_path(model_folder, tiny_models))
    window.composer.edit.setPlainText("go")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    qtbot.waitUntil(lambda: "w3" in window.chat_view.streamed_text(), timeout=10000)
    first_request = window.conversation.active_request_id()
    fake_engine.reply = "Fresh answer."
    fake_engine.token_delay_s = 0.0
    with qtbot.waitSignal(
        window.conversation.sig_reply_finished,
        timeout=10000,
        check_params_cb=lambda mid: window.store.get_message(mid).content == "Fresh answer.",
    ):
        window.messages.regenerate(None)
        assert window.conversation.active_request_id() != first_request
        # While the new request runs, the superseded one's stragglers arrive: they must not reach it.
        _feed_late_events(window, first_request)
    messages = window.store.messages(window.conversation.chat_id)
    # The stopped partial reply was stored, then the regenerate replaced it.
    assert [m.role for m in messages] == ["user", "assistant"]
    assert messages[-1].content == "Fresh answer."
    assert "LATE" not in window.chat_view.toPlainText() and not window.error_banner.isVisible()
    assert window.store.messages(window.conversation.chat_id) == messages


def test_an_overflowing_conversation_says_the_oldest_turns_were_left_out(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    fake_engine.reply = "ok " * 10
    window = make_window(engine_factory=fake_engine, context_size=600)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    window.update_chat_settings(max_tokens=64)
    long_text = "word " * 260
    send_and_wait(qtbot, window, long_text)
    send_and_wait(qtbot, window, long_text)
    sent = fake_engine.requests[-1]
    # The oldest whole turn was not sent: the prompt starts with the second user message, not an orphaned reply.
    assert [m["role"] for m in sent] == ["user"]
    assert "left out of the prompt" in window.chat_view.toPlainText()
    assert window.footer.context_gauge.maximum() == 600
    # Nothing was deleted: every message is still stored.
    assert len(window.store.messages(window.conversation.chat_id)) == 4


def test_prompt_too_long_is_reported_and_retry_is_offered(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine, context_size=600)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    window.composer.edit.setPlainText("word " * 2000)
    with qtbot.waitSignal(window.conversation.sig_busy_changed, check_params_cb=lambda busy: not busy):
        qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    text = window.chat_view.toPlainText()
    assert "context holds 600" in text and "Retry" in text
    # The message itself is kept in the chat.
    assert window.store.messages(window.conversation.chat_id)[0].role == "user"


def test_missing_model_file_keeps_the_composer_text(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    target = model_folder / tiny_models.target.name
    choose_pair(qtbot, window, target, NGRAM_KEY)
    os.remove(target)
    window.composer.edit.setPlainText("are you there?")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert window.composer.text() == "are you there?"
    assert "missing" in window.error_banner.text()
    assert window.conversation.chat_id is None  # nothing half-sent was stored


def test_edit_and_resend_replaces_the_message_and_what_followed(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    fake_engine.reply = "Answer."
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "first question")
    send_and_wait(qtbot, window, "second question")
    first = window.store.messages(window.conversation.chat_id)[0]
    window.confirm = lambda *args: True  # editing the first message drops the three after it: asked first
    window.chat_view.sig_edit_message.emit(first.id)
    assert window.composer.text() == "first question"
    assert window.composer.is_editing()
    send_and_wait(qtbot, window, "better question")
    contents = [m.content for m in window.store.messages(window.conversation.chat_id)]
    assert contents == ["better question", "Answer."]


def test_chats_can_be_searched_renamed_and_deleted(make_window, qtbot, fake_engine, model_folder, tiny_models):
    fake_engine.reply = "Sure."
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    send_and_wait(qtbot, window, "about apples")
    apples = window.conversation.chat_id
    window.new_chat()
    send_and_wait(qtbot, window, "about pears")
    assert [window.chat_list.chat_at(r).title for r in range(2)] == ["about pears", "about apples"]
    with qtbot.waitSignal(window.sidebar.sig_search_changed):
        window.sidebar.search.setText("apple")
    # The search runs off the window's thread; its result replaces the list when it arrives.
    qtbot.waitUntil(lambda: window.chat_list.rowCount() == 1)
    window.sidebar.search.clear()
    qtbot.waitUntil(lambda: window.chat_list.rowCount() == 2)
    window.chat_list.setData(window.chat_list.index(window.chat_list.row_of(apples)), "Fruit talk")
    assert window.store.get_chat(apples).title == "Fruit talk"
    window.confirm = lambda *args: True
    window.delete_chat(apples)
    assert window.store.get_chat(apples) is None
    assert window.chat_list.rowCount() == 1


def test_each_chat_keeps_its_own_speculative_switch(make_window, qtbot, fake_engine, model_folder, tiny_models):
    fake_engine.reply = "Fine."
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, _draft_path(model_folder, tiny_models))
    send_and_wait(qtbot, window, "on")
    chat_on = window.conversation.chat_id
    window.new_chat()
    window.model_bar.speculative_switch.click()
    send_and_wait(qtbot, window, "off")
    chat_off = window.conversation.chat_id
    window.open_chat(chat_on)
    assert window.model_bar.speculative()
    window.open_chat(chat_off)
    assert not window.model_bar.speculative()


def test_highlight_toggle_is_remembered(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, _draft_path(model_folder, tiny_models))
    send_and_wait(qtbot, window, "hi")
    assert window.chat_view.highlighted_text()
    window.legend_row.highlight_switch.click()
    assert window.chat_view.highlighted_text() == ""
    assert load_settings().show_highlighting is False


def test_showing_refused_proposals_is_remembered_from_the_switch_or_the_menu(make_window):
    window = make_window(show_refused=True)
    assert window.chat_view.show_refused() and window.legend_row.refused_switch.isChecked()
    window.legend_row.refused_switch.click()
    assert not window.chat_view.show_refused()
    assert load_settings().show_refused is False
    window.chat_view.sig_show_refused_toggled.emit(True)  # the transcript's context menu
    assert window.legend_row.refused_switch.isChecked() and window.chat_view.show_refused()
    assert load_settings().show_refused is True


def test_broken_chat_database_is_reported_not_overwritten(monkeypatch, tmp_path):
    from app.platform import paths
    from app.ui.shell import main as ui_main

    path = paths.database_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database at all" * 10)
    shown = []
    monkeypatch.setattr(ui_main, "ask_about_broken_database", lambda message: shown.append(message) or False)
    assert ui_main.open_store() is None
    assert shown and str(path) in shown[0]
    assert path.read_bytes().startswith(b"this is not a database")


def test_get_models_panel_is_reachable_and_a_downloaded_pair_is_selected(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine, folders=[])
    assert window.pages.currentWidget() is window.empty_page
    window.empty_page.get_models_button.click()
    panel = window.library_ctl.get_models_panel
    assert panel is not None and panel.isVisible()
    # As if the panel had downloaded a pair into the app's models folder:
    from app.platform import paths

    paths.models_dir().mkdir(parents=True, exist_ok=True)
    target = paths.models_dir() / tiny_models.target.name
    draft = paths.models_dir() / tiny_models.draft.name
    for source, dest in (
        (model_folder / tiny_models.target.name, target),
        (model_folder / tiny_models.draft.name, draft),
    ):
        dest.write_bytes(source.read_bytes())
    panel.sig_pair_downloaded.emit(str(target), str(draft))
    qtbot.waitUntil(window.models_ready, timeout=10000)
    assert window.model_bar.current_target() == str(target)
    assert window.model_bar.current_draft() == str(draft)
    assert window.pages.currentIndex() == 0
