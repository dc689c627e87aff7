"""Each chat says which model writes it and how it speculates, and opening a chat written with another
model asks before loading it: that model also answers the local API, which must never change silently. (Issue 36.)"""

from __future__ import annotations

from app.store import ChatSettings
from app.testing.synthetic import write_tiny_model
from app.ui.models.library_model import NGRAM_KEY
from tests.serve.api_fixtures import DEADLINE_S
from tests.support.ports import free_port
from tests.ui.window_helpers import choose_pair, send_and_wait


def test_opening_a_chat_with_another_model_asks_first_and_keeps_the_apis_model(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = make_window(engine_factory=fake_engine, api_server=True, api_port=free_port())
    target = str(model_folder / tiny_models.target.name)
    other = str(model_folder / tiny_models.draft_identical.name)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    control = window.api_server
    qtbot.waitUntil(lambda: bool(control.state.url), timeout=int(DEADLINE_S * 1000))
    assert "answers with tiny-target" in control.indicator.text()
    header = window.chat_header.header
    assert header.summary.text() == "tiny-target · speculative, drafts by tiny-draft, or copies earlier text"

    chat = window.store.create_chat("Written with the other model", ChatSettings(target_path=other, speculative=False))
    window.chat_lists.refresh()
    window.open_chat(chat.id)
    # Asked, not loaded: the bar, the session and the API still have the loaded model.
    assert not header.question.isHidden()
    assert header.question_text.text() == (
        "This chat was written with tiny-draft-identical, but tiny-target is loaded (it also answers the local "
        "API). Load tiny-draft-identical for this chat, or go on with tiny-target?"
    )
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


def test_a_new_chats_header_names_the_draft_the_bar_shows(make_window, qtbot, fake_engine, model_folder, tiny_models):
    from app.ui.models.library_model import NGRAM_KEY

    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    assert window.conversation.chat_id is None
    assert (
        window.chat_header.header.summary.text()
        == "tiny-target · speculative, drafts by tiny-draft, or copies earlier text"
    )
    window.choose_draft(NGRAM_KEY)
    qtbot.waitUntil(lambda: "n-gram" in window.chat_header.header.summary.text(), timeout=5000)


def test_the_header_follows_the_draft_box_while_another_target_loads(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    """Issue 45, item 4: switching the target, the header never names the old draft while the Draft box shows
    another (nor waits for the load to end to catch up)."""
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    header = window.chat_header.header.summary
    assert header.text() == "tiny-target · speculative, drafts by tiny-draft, or copies earlier text"
    fake_engine.load_delay_s = 3.0
    window.choose_target(str(model_folder / tiny_models.bad_vocab_type.name))  # tiny-draft cannot draft for it
    qtbot.waitUntil(lambda: not window.drafts.is_checking(), timeout=10000)
    assert not window.models_ready()  # still loading
    assert (
        "Copy" in window.model_bar.draft_combo.currentText() or "N-gram" in window.model_bar.draft_combo.currentText()
    )
    assert "tiny-draft" not in header.text() and "n-gram" in header.text()
    fake_engine.load_delay_s = 0.0  # the load ends now: closing the window need not wait it out


def test_a_chat_written_with_another_model_is_not_told_about_the_loaded_ones_template(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    from app.testing.synthetic import DRAFT_LAYERS, write_tiny_model

    def without_template(writer) -> None:
        del writer.kv_data[0]["tokenizer.chat_template"]

    bare = write_tiny_model(model_folder / "tiny-base.gguf", n_layer=DRAFT_LAYERS, edit=without_template)
    window = make_window(engine_factory=fake_engine)
    target = str(model_folder / tiny_models.target.name)
    chat = window.store.create_chat("Written with tiny-target", ChatSettings(target_path=target))
    choose_pair(qtbot, window, bare, None)
    qtbot.waitUntil(lambda: not window.chat_format.row.isHidden(), timeout=5000)
    window.chat_lists.refresh()
    window.open_chat(chat.id)
    assert window.chat_header.asking() and window.chat_format.row.isHidden()
    window.chat_header.header.load_button.click()
    qtbot.waitUntil(lambda: window.models_ready() and window.session.target_key() == target, timeout=20000)
    assert window.chat_format.row.isHidden()


def test_the_header_names_the_draft_the_bar_shows_after_switching_the_model_of_an_open_chat(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    """Issue 55, item 4: after a model switch in an open chat, the header kept the old pair's draft."""
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    send_and_wait(qtbot, window, "Hello there")
    header = window.chat_header.header
    assert "drafts by tiny-draft" in header.summary.text()
    # Another vocabulary: the old draft cannot draft for it, and the bar falls back to copying earlier text.
    other = write_tiny_model(model_folder / "tiny-other-vocab.gguf", vocab_variant="extra_200", name="tiny-other")
    window.library_ctl.rescan()
    qtbot.waitUntil(lambda: window.library.entry_for(str(other)) is not None, timeout=10000)
    choose_pair(qtbot, window, other, None)
    chosen = window.session.draft_key
    assert chosen != str(model_folder / tiny_models.draft.name)
    named = "copies from earlier text (n-gram)" if chosen == NGRAM_KEY else f"drafts by {header_of(window, chosen)}"
    assert header.summary.text().startswith(f"{header_of(window, str(other))} · speculative, {named}")


def header_of(window, path: str) -> str:
    return window.chat_header.model_name(path)


def test_a_load_of_the_last_model_ending_while_the_new_ones_drafts_are_checked_still_names_its_draft(
    make_window, qtbot, fake_engine, model_folder, tiny_models, monkeypatch
):
    """The header kept the old draft now and then (CI, 2026-12-06): a reload of the chat's last model, started by
    a rescan, ended while the newly chosen model's drafts were being checked, and took that choice's right to tell
    the chat which draft was chosen for it. The checks are held here so the two end in that order every time."""
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    send_and_wait(qtbot, window, "Hello there")
    held: list[tuple] = []
    checks = window.session.library_thread
    check = checks.request_draft_check
    monkeypatch.setattr(checks, "request_draft_check", lambda *args: held.append(args))
    other = write_tiny_model(model_folder / "tiny-other-vocab.gguf", vocab_variant="extra_200", name="tiny-other")
    window.library_ctl.rescan()
    qtbot.waitUntil(lambda: len(held) == 1, timeout=10000)  # the rescan checks the loaded model's drafts again
    send_load = window.engine_process.request_load

    def load_then_pick(*args, **kwargs):
        send_load(*args, **kwargs)
        if len(held) == 1:  # the last model is being loaded again when the user picks another
            window.choose_target(str(other))

    monkeypatch.setattr(window.engine_process, "request_load", load_then_pick)
    with qtbot.waitSignal(window.engine_process.sig_models_loaded, timeout=20000):
        check(*held[0])
    qtbot.waitUntil(lambda: len(held) == 2, timeout=10000)
    check(*held[1])
    qtbot.waitUntil(window.models_ready, timeout=20000)
    chosen = window.session.draft_key
    named = "copies from earlier text (n-gram)" if chosen == NGRAM_KEY else f"drafts by {header_of(window, chosen)}"
    assert window.chat_header.header.summary.text().startswith(
        f"{header_of(window, str(other))} · speculative, {named}"
    )
