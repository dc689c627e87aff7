"""The reply saver stores a reply's thinking with it, as it streams and when it ends."""

from __future__ import annotations

from app.engine.events import GenerationStats
from app.store import ChatStore
from app.store.provenance import TokenRecord
from app.ui.chat.reply_request import ReplySave
from app.ui.chat.reply_saver import ReplySaver


def _job(chat_id: int, answer: str, reasoning: str, final: bool, answers: list) -> ReplySave:
    return ReplySave(
        1,
        chat_id,
        None,
        answer,
        GenerationStats(tokens=3, reasoning_tokens=2),
        "t.gguf",
        None,
        [TokenRecord(answer)] if answer else [],
        [],
        final,
        on_done=lambda message, _s: answers.append(message),
        on_failed=answers.append,
        reasoning=reasoning,
        reasoning_tokens=[TokenRecord("", part="reasoning"), TokenRecord(reasoning, "draft", part="reasoning")],
    )


def test_the_saver_keeps_the_thinking_while_the_reply_streams_and_after(qtbot, tmp_path):
    path = tmp_path / "chats.db"
    with ChatStore(path) as store:
        chat = store.create_chat()
    saver = ReplySaver(path)
    answers: list = []
    try:
        saver.save(_job(chat.id, "", "Thinking so far", final=False, answers=answers))
        saver.save(_job(chat.id, "The answer.", "Thinking so far, and done.", final=True, answers=answers))
        saver.drain()
    finally:
        saver.close()
    stored = answers[-1]
    assert stored.content == "The answer." and stored.reasoning == "Thinking so far, and done."
    with ChatStore(path) as store:
        [reply] = store.messages(chat.id)  # one message, updated in place
        assert reply.reasoning == "Thinking so far, and done."
        assert reply.reasoning_tokens == [("", "target"), ("Thinking so far, and done.", "draft")]
