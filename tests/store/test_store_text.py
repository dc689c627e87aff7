"""Text that is not valid Unicode (a lone surrogate from a server's JSON escape) is stored, never refused."""

from __future__ import annotations

from app.store import ChatStore


def test_a_lone_surrogate_is_stored_as_a_replacement_character(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat("odd \udc80 title")
        store.add_message(chat.id, "user", "hi")
        reply = store.add_message(chat.id, "assistant", "a\ud800b", stats={"stop_reason": "x\ud800"},
                                  tokens=[("a\ud800", "target"), ("b", "draft")], target_name="srv\udfff")
        assert store.get_message(reply.id).tokens == [("a\ud800", "target"), ("b", "draft")]  # kept exactly
        store.update_reply(reply.id, "a\ud800bc", stats={"tokens": 3})
        message = store.get_message(reply.id)
        assert message.content == "a\ufffdbc"
        assert message.target_name == "srv\ufffd"
        assert store.get_chat(chat.id).title == "odd \ufffd title"
