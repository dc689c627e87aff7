"""Earlier replies go back to the engine with their thinking as `reasoning_content`, never inside their text."""

from __future__ import annotations

from app.store import ChatStore
from app.ui.chat.chat_prompt import prompt_messages


def test_a_reply_goes_back_with_its_thinking_beside_its_answer(tmp_path):
    with ChatStore(tmp_path / "chats.db") as store:
        chat = store.create_chat()
        store.add_message(chat.id, "user", "Is 221 prime?")
        thought = store.add_message(chat.id, "assistant", "No: 13 × 17.", reasoning="Try 13: 13 × 17 = 221.")
        store.add_message(chat.id, "user", "And 223?")
        store.add_message(chat.id, "assistant", "Yes.")  # a reply of a model that does not think
        store.add_message(chat.id, "user", "Thanks")
        messages = prompt_messages(store, chat.id, "Be brief.")
        assert messages == [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Is 221 prime?"},
            {"role": "assistant", "content": "No: 13 × 17.", "reasoning_content": "Try 13: 13 × 17 = 221."},
            {"role": "user", "content": "And 223?"},
            {"role": "assistant", "content": "Yes."},
            {"role": "user", "content": "Thanks"},
        ]
        # Continue carries on the reply itself: its thinking goes with it.
        assert prompt_messages(store, chat.id, "", until_id=thought.id)[-1]["reasoning_content"].startswith("Try")
