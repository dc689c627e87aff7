"""Compare with plain and Speculate anyway, with the scripted engine in the real engine process.

The library and compatibility checks are real (synthetic GGUF files); generation is scripted, so a comparison can
be made slow enough to send a message in the middle of it.
"""

from __future__ import annotations

from app.replies.status_words import sentence
from app.ui.chat.compare_plain import CANCELLED_BY_REPLY
from app.ui.chat.speculate_anyway import ANYWAY_LINK, AUTO_LINK, FIXED_DRAFT_LENGTH, OFFER
from tests.ui.window_helpers import choose_pair, click_link, send_and_wait

PAUSED = "speculation paused: on this machine verifying costs more than it saves (a batch of 2 costs 1.90x one token)"


def _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    return window


def _settings_but_speculation(config: dict) -> dict:
    """The request's settings but those a plain run changes on purpose: no speculation, a session of its own, and
    no history drafting (it neither reads earlier replies nor adds its own)."""
    return {k: v for k, v in config.items() if k not in ("speculative", "session", "history")}


def _compare(qtbot, window, message_id: int, label: str = "Compare with plain"):
    with qtbot.waitSignal(window.plain_compare.sig_result, timeout=20000) as blocker:
        click_link(qtbot, window.chat_view, label, window.chat_view.action_href("compare", message_id))
    return blocker.args[1]


def test_compare_with_plain_reports_identical_greedy_text_and_keeps_it(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    message_id = send_and_wait(qtbot, window, "Write add()")
    view = window.chat_view
    fake_engine.token_delay_s = 0.02  # a plain run long enough to be seen running
    with qtbot.waitSignal(window.plain_compare.sig_result, timeout=20000):
        click_link(qtbot, view, "Compare with plain", view.action_href("compare", message_id))
        assert "Comparing with plain decoding…" in view.toPlainText()
        # Its progress, as it runs: the reply ended where its model stopped, so the plain run's length is unknown
        # and no share of max tokens is shown (issue 55, item 6: "52 of 1,024 (5%)" for a 387-token reply).
        qtbot.waitUntil(lambda: "so far (the reply has" in view.toPlainText(), timeout=10000)
        assert "%)" not in view.toPlainText().split("Comparing with plain decoding…")[1]
    # The same request again: the same messages and settings, speculation off.
    first, plain = fake_engine.configs[-2:]
    assert fake_engine.requests[-1] == fake_engine.requests[-2]
    assert first["speculative"] and not plain["speculative"]
    assert _settings_but_speculation(plain) == _settings_but_speculation(first)
    assert plain["history"] is False
    shown = view.toPlainText()
    assert "Comparing with plain" not in shown
    assert "Plain decoding" in shown and "tok/s" in shown and "same text" in shown
    assert any(word in shown for word in ("x faster", "x, slower", "x, about the same speed"))
    stored = window.store.get_message(message_id).comparison
    assert stored["identical"] is True and stored["plain_tokens_per_second"] > 0

    # Kept with the reply: shown again after another chat was opened and this one reopened.
    chat_id = window.conversation.chat_id
    window.new_chat()
    assert "Plain decoding" not in view.toPlainText()
    window.open_chat(chat_id)
    assert "same text" in view.toPlainText() and "Compare again" in view.toPlainText()


def test_sampled_texts_that_differ_are_said_to_differ_by_sampling(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    window.update_chat_settings(temperature=0.8, seed=7)
    message_id = send_and_wait(qtbot, window, "Tell a story")
    fake_engine.plain_reply = "Once upon another time."
    comparison = _compare(qtbot, window, message_id)
    assert comparison["identical"] is False and comparison["sampled"] is True
    assert "texts differ (sampling)" in window.chat_view.toPlainText()
    assert fake_engine.configs[-1]["seed"] == 7 and fake_engine.configs[-1]["temperature"] == 0.8


def test_sending_during_a_comparison_cancels_it_and_says_so(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    message_id = send_and_wait(qtbot, window, "Write add()")
    fake_engine.token_delay_s = 0.3  # the plain run would take many seconds
    click_link(qtbot, window.chat_view, "Compare with plain", window.chat_view.action_href("compare", message_id))
    qtbot.waitUntil(lambda: not fake_engine.configs[-1]["speculative"], timeout=10000)  # the engine is on it
    assert window.plain_compare.running_for() == message_id
    fake_engine.token_delay_s = 0.0
    second = send_and_wait(qtbot, window, "And subtract?")
    assert window.plain_compare.running_for() is None
    assert CANCELLED_BY_REPLY in window.chat_view.toPlainText()
    assert window.store.get_message(message_id).comparison is None
    reply = window.store.get_message(second)
    assert reply.stats.stop_reason == "eos" and reply.content == fake_engine.reply
    # Asking again runs it to its end.
    assert _compare(qtbot, window, message_id)["identical"] is True
    assert CANCELLED_BY_REPLY not in window.chat_view.toPlainText()


def test_clicking_the_running_comparison_cancels_it(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    message_id = send_and_wait(qtbot, window, "Write add()")
    fake_engine.token_delay_s = 0.3
    href = window.chat_view.action_href("compare", message_id)
    click_link(qtbot, window.chat_view, "Compare with plain", href)
    with qtbot.waitSignal(window.engine_process.sig_generation_ended, timeout=10000):
        click_link(qtbot, window.chat_view, "Cancel comparison", href)
    assert window.plain_compare.running_for() is None
    assert "Comparing with plain" not in window.chat_view.toPlainText()
    assert window.store.get_message(message_id).comparison is None


def test_a_reply_of_another_model_is_not_compared(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    message_id = send_and_wait(qtbot, window, "Write add()")
    requests = len(fake_engine.configs)
    choose_pair(qtbot, window, model_folder / tiny_models.draft_identical.name, None)
    click_link(qtbot, window.chat_view, "Compare with plain", window.chat_view.action_href("compare", message_id))
    shown = window.chat_view.toPlainText()
    assert "This reply was written by tiny-target" in shown and "to compare" in shown
    assert len(fake_engine.configs) == requests  # nothing was run


def test_speculate_anyway_fixes_the_draft_length_for_this_chat(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    fake_engine.round_reason, fake_engine.round_kind = PAUSED, "costly"
    offer = window.speculate_anyway
    assert not offer.offered()
    send_and_wait(qtbot, window, "hello")
    assert window.footer.status_line.text().startswith("Speculation paused")
    assert offer.offered() and OFFER in offer.label.text()
    # Before the click, it says what the click changes (issue 55, item 6: it fixed the length without a word).
    assert f"fixes this chat's draft length at {FIXED_DRAFT_LENGTH}" in offer.label.text()
    assert "attach the file you are editing" in window.footer.status_line.toolTip()

    offer.label.linkActivated.emit(ANYWAY_LINK)  # the user clicks the offer
    assert window.chat_settings.current().draft_max == FIXED_DRAFT_LENGTH
    # One sentence says it, the link back stands apart from it, and the pause offered against is no longer said.
    fixed = "Drafting every round, at the draft length set for this chat, even where that is slower."
    assert window.footer.status_line.text() == fixed
    assert "Back to automatic" in offer.label.text() and "Drafting" not in offer.label.text()
    # The link says what it undoes, whatever the status line says by then (the screenshots showed a change of
    # threads there, and a bare "· Back to automatic" beside it).
    window.footer.show_status(sentence("Now using 1 CPU thread instead of 2: another program is busy."))
    assert offer.label.text().startswith(f"Draft length fixed at {FIXED_DRAFT_LENGTH} for this chat: ")
    send_and_wait(qtbot, window, "again")
    assert fake_engine.configs[-1]["draft_max"] == FIXED_DRAFT_LENGTH
    assert window.footer.status_line.text() == fixed

    # Only this chat: a new chat is automatic again, and the first chat still says it is fixed when reopened.
    chat_id = window.conversation.chat_id
    window.new_chat()
    assert offer.label.isHidden() and window.chat_settings.current().draft_max is None
    window.open_chat(chat_id)
    assert "Back to automatic" in offer.label.text() and not offer.label.isHidden()

    offer.label.linkActivated.emit(AUTO_LINK)  # back to automatic
    assert window.chat_settings.current().draft_max is None
    assert offer.label.isHidden()
    send_and_wait(qtbot, window, "and once more")
    assert fake_engine.configs[-1]["draft_max"] is None
    assert offer.offered()
    # Drafting again: the footer no longer offers to draft while it says it is drafting.
    fake_engine.round_kind = "draft"
    send_and_wait(qtbot, window, "and with drafts")
    assert window.footer.status_line.text().startswith("Speculating") and not offer.offered()


def test_the_status_line_says_when_the_engine_follows_the_load_with_fewer_threads(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    fake_engine.threads_drop_after = 1
    send_and_wait(qtbot, window, "hello")
    assert window.footer.status_line.text() == "Now using 1 CPU thread instead of 2: another program is busy."


def test_a_reply_written_without_speculation_is_not_offered_a_comparison(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    window.set_speculative(False)
    send_and_wait(qtbot, window, "plain, please")
    assert "Compare with plain" not in window.chat_view.toPlainText()
    window.set_speculative(True)
    send_and_wait(qtbot, window, "and now with drafts")
    assert window.chat_view.toPlainText().count("Compare with plain") == 1


def test_a_regenerated_reply_is_compared_as_it_was_sampled_and_keeps_its_versions(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    """Issue 45, items 5 and 6: Regenerate samples a greedy chat's reply at 0.7 with a fresh seed; Compare with plain
    runs it the same way (not greedy), and the version switcher stays when the comparison is shown."""
    window = _ready_window(make_window, qtbot, fake_engine, model_folder, tiny_models)
    view = window.chat_view
    first = send_and_wait(qtbot, window, "Write add()")
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=20000) as regenerated:
        click_link(qtbot, view, "Regenerate", view.action_href("regenerate", first))
    message_id = regenerated.args[0]
    reply = fake_engine.configs[-1]
    assert reply["temperature"] > 0 and reply["seed"] is not None
    assert "‹  2/2  ›" in view.toPlainText()
    _compare(qtbot, window, message_id)
    plain = fake_engine.configs[-1]
    assert (plain["temperature"], plain["seed"]) == (reply["temperature"], reply["seed"])
    assert not plain["speculative"]
    assert "Plain decoding" in view.toPlainText() and "‹  2/2  ›" in view.toPlainText()


def test_compare_asks_as_the_reply_was_asked_for_a_model_without_a_template(
    make_window, qtbot, fake_engine, model_folder
):
    """A template-less model's replies are raw completions: the plain run is one too, or its text differs."""
    from app.testing.synthetic import write_tiny_model

    def without_template(writer) -> None:
        del writer.kv_data[0]["tokenizer.chat_template"]

    bare = write_tiny_model(model_folder / "tiny-base.gguf", edit=without_template)
    write_tiny_model(model_folder / "tiny-base-draft.gguf", n_layer=2)
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, bare, None)
    message_id = send_and_wait(qtbot, window, "Once upon a time")
    reply = fake_engine.configs[-1]
    assert reply["chat_format"] == "raw"
    _compare(qtbot, window, message_id)
    assert fake_engine.configs[-1]["chat_format"] == "raw"
