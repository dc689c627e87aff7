"""The window on the real engine (llama.cpp) with the synthetic models: what a user sees end to end."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.engine.events import TokenEvent
from app.store import ChatStore
from app.ui.models.library_model import PATH_ROLE
from tests.ui.window_helpers import choose_pair, send_and_wait


# Short replies with a fixed draft length: the test is about what the window shows, not the speed controller.
SHORT = {"max_tokens": 24, "draft_max": 4}


def _pair(model_folder: Path, tiny_models) -> tuple[Path, Path]:
    # The identical draft: under greedy sampling the target accepts every drafted token.
    return model_folder / tiny_models.target.name, model_folder / tiny_models.draft_identical.name


def test_pick_pair_send_stream_highlight_then_switch_off(make_window, qtbot, model_folder, tiny_models):
    window = make_window()
    target, draft = _pair(model_folder, tiny_models)
    choose_pair(qtbot, window, target, draft)
    window.update_chat_settings(**SHORT)
    batches = []
    window.engine_process.sig_stream.connect(batches.append)
    view = window.chat_view
    streamed_before_render: list[str] = []
    finish = view.finish_stream
    view.finish_stream = lambda message: (streamed_before_render.append(view.streamed_text()), finish(message))
    send_and_wait(qtbot, window, "hello there")
    reply = window.store.messages(window.conversation.chat_id)[-1]
    # Every token arrived as its own event (in batches) and was appended to the streaming reply before it was
    # rendered.
    token_events = [e for batch in batches for e in batch if isinstance(e, TokenEvent)]
    assert len(token_events) == reply.stats.tokens > 1
    assert streamed_before_render == [reply.content]
    highlighted = window.chat_view.highlighted_text()
    assert highlighted, "accepted draft tokens should be highlighted"
    drafted_text = "".join(text for text, source in reply.tokens if source == "draft")
    assert drafted_text and reply.stats.accepted > 0
    assert reply.draft_name and reply.target_name

    window.model_bar.speculative_switch.click()
    send_and_wait(qtbot, window, "and again")
    second = window.store.messages(window.conversation.chat_id)[-1]
    assert all(source == "target" for _, source in second.tokens)
    assert second.stats.drafted == 0
    assert window.chat_view.highlighted_text() == highlighted  # nothing new is green


@pytest.mark.slow
def test_restart_brings_the_chat_back_with_its_highlighting(make_window, qtbot, model_folder, tiny_models):
    window = make_window()
    target, draft = _pair(model_folder, tiny_models)
    choose_pair(qtbot, window, target, draft)
    window.update_chat_settings(**SHORT)
    send_and_wait(qtbot, window, "remember me")
    chat_id = window.conversation.chat_id
    highlighted = window.chat_view.highlighted_text()
    text = window.chat_view.toPlainText()
    assert highlighted
    window.close()
    assert not window.engine_process.is_running()

    reopened = make_window()
    assert reopened.chat_list.chat_at(0).id == chat_id
    reopened.open_chat(chat_id)
    assert reopened.chat_view.highlighted_text() == highlighted
    assert reopened.chat_view.toPlainText() == text
    # The chat remembers its models and switch.
    assert reopened.model_bar.current_target() == str(target)
    assert reopened.model_bar.speculative()


def test_incompatible_drafts_are_listed_disabled_with_their_reason(make_window, qtbot, model_folder, tiny_models):
    window = make_window()
    window.choose_target(str(model_folder / tiny_models.target.name))
    qtbot.waitUntil(lambda: not window.drafts.is_checking(), timeout=10000)
    combo = window.model_bar.draft_combo
    model = combo.model()
    rows = {Path(model.index(r, 0).data(PATH_ROLE)).name: model.index(r, 0) for r in range(model.rowCount())}
    for name, words in (
        (tiny_models.bad_vocab_size.name, "vocabulary sizes"),
        (tiny_models.bad_vocab_type.name, "tokenizer types"),
        (tiny_models.truncated.name, "Truncated"),
    ):
        index = rows[name]
        assert not (model.flags(index) & Qt.ItemFlag.ItemIsEnabled), name
        assert words in index.data(Qt.ItemDataRole.ToolTipRole)
    # The best compatible draft was chosen by itself.
    assert Path(window.model_bar.current_draft()).name == tiny_models.draft.name
    # Changing the target and back re-filters from the cache, with no new check.
    window.choose_target(str(model_folder / tiny_models.draft_identical.name))
    qtbot.waitUntil(lambda: not window.drafts.is_checking(), timeout=10000)
    library_thread = window.session.library_thread
    asked: list[str] = []
    ask = library_thread.request_draft_check
    library_thread.request_draft_check = lambda request_id, path, entries: (
        asked.append(path),
        ask(request_id, path, entries),
    )
    window.choose_target(str(model_folder / tiny_models.target.name))
    assert not window.drafts.is_checking() and asked == []
    assert "Checking drafts" not in window.model_bar.load_state.text()


def test_a_finished_reply_is_in_the_database_at_once(make_window, qtbot, model_folder, tiny_models):
    window = make_window()
    target, draft = _pair(model_folder, tiny_models)
    choose_pair(qtbot, window, target, draft)
    window.update_chat_settings(**SHORT)
    message_id = send_and_wait(qtbot, window, "persist")
    # A second connection, as after a crash: the reply is already committed.
    other = ChatStore()
    try:
        stored = other.get_message(message_id)
        assert stored is not None and stored.tokens
    finally:
        other.close()


def test_stop_on_the_real_engine(make_window, qtbot, model_folder, tiny_models):
    """Stop pressed while the real engine writes: the window is free at once and the engine takes the next
    message. Pressed right after Send, so no timing decides whether there is still something to stop (the
    engine's side, a partial reply kept, is tests/engine/local/test_engine.py's stop test)."""
    window = make_window()
    target, draft = _pair(model_folder, tiny_models)
    choose_pair(qtbot, window, target, draft)
    window.update_chat_settings(max_tokens=1500, draft_max=4)
    window.composer.edit.setPlainText("talk for a long time")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)
    assert window.conversation.is_busy() and window.composer.button.text() == "Stop"
    window.composer.button.click()  # Stop
    assert not window.conversation.is_busy() and window.composer.button.text() == "Send"
    chat_id = window.conversation.chat_id
    assert [m.role for m in window.store.messages(chat_id)] == ["user"]  # nothing arrived before Stop
    # The engine stops within one round: the next message gets a whole reply, and nothing of the stopped one.
    window.update_chat_settings(max_tokens=8)
    message_id = send_and_wait(qtbot, window, "short now")
    reply = window.store.get_message(message_id)
    assert reply.stats.stop_reason in ("max_tokens", "eos") and reply.stats.tokens <= 8
    assert [m.role for m in window.store.messages(chat_id)] == ["user", "user", "assistant"]


@pytest.mark.real_models
def test_real_library_offers_the_qwen_draft_and_explains_the_others(make_window, qtbot, real_models):
    window = make_window(folders=[str(real_models["target"].parent)])
    window.choose_target(str(real_models["target"]))
    qtbot.waitUntil(lambda: not window.drafts.is_checking(), timeout=60000)
    options = {Path(o.key).name: o for o in window.drafts.options()}
    draft = options[real_models["draft"].name]
    assert draft.enabled and draft.detail.startswith("Recommended")
    for other in ("gemma", "smollm"):
        option = options[real_models[other].name]
        assert not option.enabled and "Incompatible" in option.detail
    assert Path(window.model_bar.current_draft()).name == real_models["draft"].name


def _measured_files() -> set[str]:
    """The model files whose forward-pass costs are on disk."""
    import json

    from app.engine.local.cost_cache import _cache_file

    try:
        data = json.loads(_cache_file().read_text())
    except (OSError, ValueError):
        return set()
    return {Path(key.split("|")[0]).name for key in data if key != "version"}


@pytest.mark.slow
def test_a_chosen_pair_is_ready_without_measuring_and_is_measured_while_idle(
    make_window, qtbot, model_folder, tiny_models
):
    """Choosing models waits for llama.cpp's load alone: the speed measurement runs later, in idle time, and a
    message sent meanwhile still gets its reply."""
    target, draft = _pair(model_folder, tiny_models)
    window = make_window()
    measured_when_ready: list[set[str]] = []
    window.engine_process.sig_models_loaded.connect(lambda *_: measured_when_ready.append(_measured_files()))
    choose_pair(qtbot, window, target, draft)
    assert measured_when_ready and target.name not in measured_when_ready[-1]
    qtbot.waitUntil(lambda: {target.name, draft.name} <= _measured_files(), timeout=60000)
    send_and_wait(qtbot, window, "Hello there")
    reply = window.store.messages(window.conversation.chat_id)[-1]
    assert reply.role == "assistant" and reply.content
