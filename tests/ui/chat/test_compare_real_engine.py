"""Compare with plain on the real engine (llama.cpp) with the synthetic models: greedy speculation changes the
speed, never the text."""

from __future__ import annotations


from tests.ui.window_helpers import choose_pair, click_link, send_and_wait


def test_greedy_speculative_reply_equals_its_plain_run(make_window, qtbot, model_folder, tiny_models):
    window = make_window()
    # The smaller draft: some drafts are refused, so the reply mixes draft and target tokens.
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    window.update_chat_settings(max_tokens=32, draft_max=4)
    message_id = send_and_wait(qtbot, window, "hello there")
    reply = window.store.get_message(message_id)
    assert reply.stats.drafted > 0 and reply.stats.tokens > 4
    with qtbot.waitSignal(window.plain_compare.sig_result, timeout=60000) as blocker:
        click_link(qtbot, window.chat_view, "Compare with plain", window.chat_view.action_href("compare", message_id))
    comparison = blocker.args[1]
    assert comparison["identical"] is True and comparison["sampled"] is False
    assert comparison["plain_tokens"] == reply.stats.tokens
    assert "same text" in window.chat_view.toPlainText()
    assert window.store.get_message(message_id).comparison == comparison
