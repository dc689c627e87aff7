"""What the engine reads of a stored chat: its current branch (app.store.branches). No Qt."""

from __future__ import annotations

from typing import Optional

from app.store import ChatStore


def prompt_messages(store: ChatStore, chat_id: Optional[int], system_prompt: str, until_id: Optional[int] = None,
                    before_id: Optional[int] = None) -> list[dict]:
    """The chat as the engine reads it; with `until_id`, only up to and including that message; with `before_id`,
    only the messages before that one."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt.strip() else []
    if chat_id is None:
        return messages
    for message_id, role, content in store.message_texts(chat_id):
        if before_id is not None and message_id >= before_id:
            break
        if role in ("user", "assistant"):
            messages.append({"role": role, "content": content})
        if until_id is not None and message_id == until_id:
            break
    return messages

