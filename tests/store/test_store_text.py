"""Text that is not valid Unicode (a lone surrogate from a server's JSON escape) is stored, never refused."""

from __future__ import annotations

from app.engine.events import GenerationStats
from app.store import ChatStore


def test_a_lone_surrogate_is_stored_as_a_replacement_character(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat("odd \udc80 title")
        store.add_message(chat.id, "user", "hi")
        reply = store.add_message(
            chat.id,
            "assistant",
            "a\ud800b",
            stats=GenerationStats(stop_reason="x\ud800"),
            tokens=[("a\ud800", "target"), ("b", "draft")],
            target_name="srv\udfff",
        )
        assert store.get_message(reply.id).tokens == [("a\ud800", "target"), ("b", "draft")]  # kept exactly
        store.update_reply(reply.id, "a\ud800bc", stats=GenerationStats(tokens=3))
        message = store.get_message(reply.id)
        assert message.content == "a\ufffdbc"
        assert message.target_name == "srv\ufffd"
        assert store.get_chat(chat.id).title == "odd \ufffd title"


def test_a_huge_reply_is_stored_whole_and_found_by_its_first_words(tmp_path):
    reply = "lighthouse keeper " + "x" * 2_000_000
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat("huge")
        store.add_message(chat.id, "user", "hi")
        message = store.add_message(chat.id, "assistant", reply)
        store.update_reply(message.id, reply + " and more")
        assert store.get_message(message.id).content == reply + " and more"
        assert [c.id for c in store.list_chats("lighthouse")] == [chat.id]
        store.delete_messages_from(chat.id, message.id)
        assert store.list_chats("lighthouse") == []
