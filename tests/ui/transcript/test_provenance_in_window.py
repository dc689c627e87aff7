"""A reply's provenance through the window: every token's origin (draft model or n-gram copy) and round, and every
round's proposal with its refused tail, reach the view and the store, while streaming and across a Continue."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from app.store.provenance import token_records
from app.engine.events import GenerationStats

from app.ui.models.library_model import NGRAM_KEY
from tests.ui.window_helpers import choose_pair, send_and_wait

ORIGIN_OF_DRAFTER = {"model": "draft", "ngram": "ngram", "history": "history"}


def _pair(model_folder: Path, tiny_models) -> tuple[Path, Path]:
    return model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name


def assert_tokens_match_rounds(message) -> None:
    """Each token is, in order within its round, a kept proposal (with its drafter's origin) or the target's own."""
    assert message.tokens is not None and message.rounds is not None
    assert len(message.token_rounds) == len(message.tokens)
    position: dict[int, int] = {}
    for (text, origin), r in zip(message.tokens, message.token_rounds):
        assert r >= 0, "every token of the scripted engine comes from a round"
        record = message.rounds[r]
        j = position.get(r, 0)
        position[r] = j + 1
        if j < record.kept:
            assert (text, origin) == (record.proposed_text[j], ORIGIN_OF_DRAFTER[record.drafter])
        else:
            assert (j, text, origin) == (record.kept, record.own_text, "target")


def test_origins_rounds_and_refused_proposals_are_shown_and_stored(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    fake_engine.refuse_tail = 2
    fake_engine.refused_text = " maybe never"
    fake_engine.drafter = "alternate"
    window = make_window(engine_factory=fake_engine)
    shown: list[tuple[str, str]] = []
    shown_rounds: list[int] = []
    ghosts_while_streaming: list[str] = []
    original = window.chat_view.append_tokens

    def append(tokens, rounds=None):
        shown.extend((token.text, token.origin) for token in tokens)
        shown_rounds.extend(token.round for token in tokens)
        original(tokens, rounds)
        ghosts_while_streaming.append(window.chat_view.toPlainText())

    window.chat_view.append_tokens = append
    window.chat_view.set_show_refused(True)
    choose_pair(qtbot, window, *_pair(model_folder, tiny_models))
    stored = window.store.get_message(send_and_wait(qtbot, window, "Write add()"))
    # While it streamed, each token came with its round, and the refused proposals showed inline as ghost text.
    assert shown_rounds == stored.token_rounds
    assert any(" maybe never" in text for text in ghosts_while_streaming)

    assert_tokens_match_rounds(stored)
    assert shown == stored.tokens  # the view got (text, origin), n-gram copies told apart from the draft model
    assert {"draft", "ngram", "target"} == {origin for _, origin in stored.tokens}
    assert [r.drafter for r in stored.rounds[:3]] == ["model", "ngram", "model"]
    first = stored.rounds[0]
    assert first.proposed_text[first.kept :] == [" maybe", " never"]  # the refused tail
    assert first.refused_text == " maybe never" and first.k == len(first.proposed) == first.kept + 2
    assert sum(r.kept for r in stored.rounds) == stored.stats.accepted
    assert sum(len(r.proposed) for r in stored.rounds) == stored.stats.drafted
    assert all(r.time_s == 0.02 for r in stored.rounds)
    # Reopened, the chat's transcript message carries the same provenance for the view.
    window.conversation.reload()
    from app.ui.transcript.format import transcript_message

    again = transcript_message(window.store.get_message(stored.id))
    assert again.tokens == token_records(stored.tokens, stored.token_rounds) and again.rounds == stored.rounds


def test_plain_decoding_keeps_one_round_per_token(make_window, qtbot, fake_engine, model_folder, tiny_models):
    fake_engine.reply = "one two three"
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, *_pair(model_folder, tiny_models))
    window.model_bar.speculative_switch.click()
    stored = window.store.get_message(send_and_wait(qtbot, window, "count"))
    assert stored.token_rounds == [0, 1, 2]
    assert [(r.drafter, r.proposed, r.own_text) for r in stored.rounds] == [
        ("none", [], "one"),
        ("none", [], " two"),
        ("none", [], " three"),
    ]
    assert_tokens_match_rounds(stored)


def test_rounds_are_saved_while_streaming_and_offset_across_continue(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    fake_engine.token_delay_s = 0.01
    fake_engine.reply = " ".join(f"w{i}" for i in range(400))
    fake_engine.refuse_tail = 1
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, *_pair(model_folder, tiny_models))
    window.composer.edit.setPlainText("go on")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)

    # Saved while it streams (every 64 tokens or second), with the rounds so far.
    def saved_part():
        chat_id = window.conversation.chat_id
        replies = [m for m in window.store.messages(chat_id) if m.role == "assistant"] if chat_id else []
        return replies[0] if replies and replies[0].rounds else None

    qtbot.waitUntil(lambda: saved_part() is not None, timeout=20000)
    part = saved_part()
    assert part.stats.stop_reason == "interrupted"
    assert_tokens_match_rounds(part)

    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=10000) as blocker:
        window.composer.button.click()  # Stop
    stopped = window.store.get_message(blocker.args[0])
    assert_tokens_match_rounds(stopped)
    earlier = len(stopped.rounds)

    fake_engine.token_delay_s = 0.0
    fake_engine.reply = " and the end of it all."
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=10000) as blocker:
        window.messages.continue_reply(stopped.id)
    continued = window.store.get_message(blocker.args[0])
    assert continued.id == stopped.id and continued.content == stopped.content + " and the end of it all."
    assert continued.rounds[:earlier] == stopped.rounds
    assert continued.token_rounds[: len(stopped.tokens)] == stopped.token_rounds
    # The engine numbered the new rounds from 0; stored, they follow the earlier ones.
    assert continued.token_rounds[len(stopped.tokens)] == earlier
    assert len(continued.rounds) == earlier + 2  # 6 words: a round of 3 kept + own, then 1 kept + own
    assert_tokens_match_rounds(continued)


def test_continuing_a_reply_saved_without_rounds(make_window, qtbot, fake_engine, model_folder, tiny_models):
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, *_pair(model_folder, tiny_models))
    chat = window.store.create_chat()
    window.store.add_message(chat.id, "user", "hi")
    old = window.store.add_message(
        chat.id,
        "assistant",
        "Old text",
        tokens=[("Old", "draft"), (" text", "target")],
        stats=GenerationStats(stop_reason="cancelled"),
    )
    window.open_chat(chat.id)
    fake_engine.reply = " more"
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=10000) as blocker:
        window.messages.continue_reply(old.id)
    continued = window.store.get_message(blocker.args[0])
    assert continued.tokens == [("Old", "draft"), (" text", "target"), (" more", "target")]
    assert continued.token_rounds == [-1, -1, 0] and len(continued.rounds) == 1


def test_history_drafts_show_in_their_own_colour_and_deleting_the_chat_forgets_its_text(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    from app.engine.speculation.history_file import HistoryFile
    from app.replies.export import chat_document, load_chat
    from app.ui.widgets import style

    fake_engine.drafter = "history"
    window = make_window(engine_factory=fake_engine)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, NGRAM_KEY)
    stored = window.store.get_message(send_and_wait(qtbot, window, "Write add() again"))
    assert_tokens_match_rounds(stored)
    assert "history" in {origin for _, origin in stored.tokens}
    shown = window.chat_view.highlighted_text("history")
    assert shown.strip() and window.chat_view.highlighted_text("ngram") == ""
    word = next(text.strip() for text, origin in stored.tokens if origin == "history" and len(text.strip()) > 2)
    cursor = window.chat_view.document().find(word)
    assert cursor.charFormat().background().color() == style.history_color()
    exported = chat_document(*load_chat(window.store, window.conversation.chat_id))
    reply = exported["messages"][-1]
    assert any(t["origin"] == "history" for t in reply["tokens"])
    assert any(r["drafter"] == "history" for r in reply["rounds"])

    chat_id = window.conversation.chat_id
    history = HistoryFile()
    history.add(f"chat-{chat_id}", "text this chat wrote")
    history.add("cli", "text generate wrote")
    window.confirm = lambda *args: True
    with qtbot.waitSignal(window.engine_process.sig_chat_forgotten, timeout=10000):
        window.delete_chat(chat_id)  # the engine process edits its history file
    assert [text for _, _, text in history.texts(list(history.ids()))] == ["text generate wrote"]
