"""What the engine reads of a stored chat: its current branch (app.store.branches), and its session there. No Qt."""

from __future__ import annotations

from typing import Optional, Sequence

from app.documents.question import DocsInput
from app.replies.tool_loop import call_messages
from app.store import ChatStore
from app.store.attachments import PictureFile


def chat_session(chat_id: Optional[int]) -> str:
    """The engine's session of a chat: its speculation statistics, and the texts it gave the history drafter."""
    return f"chat-{chat_id}"


def prompt_messages(
    store: ChatStore,
    chat_id: Optional[int],
    system_prompt: str,
    until_id: Optional[int] = None,
    before_id: Optional[int] = None,
    sees_pictures: bool = True,
) -> list[dict]:
    """The chat as the engine reads it; with `until_id`, only up to and including that message; with `before_id`,
    only the messages before that one. For a model that cannot see (`sees_pictures` False: the chat moved to
    another model), each picture is a line naming it, so the chat's text can still be answered.

    A reply's thinking goes with it as `reasoning_content` (the name llama-server and the OpenAI-compatible servers
    use), never inside `content`: whether the model reads it again is its chat template's rule (most drop earlier
    turns' thinking; some keep the turns after the last question), which the engine applies. A reply that called
    tools goes as the template wants it: the assistant's `tool_calls`, then a `tool` message with each result; one
    that only asked again for calls already made (their answer "repeated") is left out, as `generate --mcp` leaves
    it out, so the model answers from the results it had rather than calling again."""
    messages = [{"role": "system", "content": system_prompt}] if system_prompt.strip() else []
    if chat_id is None:
        return messages
    reasoning = store.reasoning_texts(chat_id)
    tool_calls = store.tool_calls_of(chat_id)
    pictures = store.pictures_of(chat_id)
    asked = _last_question(store, chat_id, until_id, before_id)
    sources = store.projects.sources_of(chat_id).get(asked, ()) if asked is not None else ()
    for message_id, role, content in store.message_texts(chat_id):
        if before_id is not None and message_id >= before_id:
            break
        if role in ("user", "assistant"):
            if message_id == asked and sources:
                content = DocsInput.from_sources(sources).text(content)
            message: dict = {"role": role, "content": content}
            if role == "user" and message_id in pictures:
                shown = pictures[message_id]
                message["content"] = picture_parts(shown, content) if sees_pictures else picture_notes(shown, content)
            if role == "assistant" and message_id in reasoning:
                message["reasoning_content"] = reasoning[message_id]
            calls = tool_calls.get(message_id, ()) if role == "assistant" else ()
            if calls and all(call.answer == "repeated" for call in calls):
                pass  # a reply that only asked again is left out (above)
            elif calls:
                turn = call_messages(content, calls)
                messages.append({**turn[0], **message, "tool_calls": turn[0]["tool_calls"]})
                messages.extend(turn[1:])
            else:
                messages.append(message)
        if until_id is not None and message_id == until_id:
            break
    return messages


def _last_question(store: ChatStore, chat_id: int, until_id: Optional[int], before_id: Optional[int]) -> Optional[int]:
    """The id of the last user message the prompt holds (with `until_id` and `before_id` as prompt_messages reads
    them), or None."""
    asked = None
    for message_id, role, _text in store.message_texts(chat_id):
        if before_id is not None and message_id >= before_id:
            break
        if role == "user":
            asked = message_id
        if until_id is not None and message_id == until_id:
            break
    return asked


def picture_notes(pictures: Sequence[PictureFile], text: str) -> str:
    """A user's message with pictures, for a model that cannot see them: a line naming each, then the text."""
    return "".join(f"[picture: {picture.name}]\n" for picture in pictures) + text


def answers_pictures(store: ChatStore, chat_id: Optional[int], reply_id: Optional[int] = None) -> bool:
    """Whether the user's message that the reply `reply_id` answers (None: the chat's next reply) carries pictures."""
    if chat_id is None:
        return False
    asked = None
    for message_id, role, _text in store.message_texts(chat_id):
        if reply_id is not None and message_id >= reply_id:
            break
        if role == "user":
            asked = message_id
    return asked is not None and asked in store.pictures_of(chat_id)


def picture_parts(pictures: Sequence[PictureFile], text: str) -> list[dict]:
    """A user's message with pictures as the engine reads it: the pictures first, then the text (as `generate
    --image` sends them). A picture whose file is gone from disk is left out; the text always goes."""
    parts: list[dict] = []
    for picture in pictures:
        try:
            parts.append({"type": "image", "image": picture.image_input()})
        except OSError:
            continue
    return [*parts, {"type": "text", "text": text}]
