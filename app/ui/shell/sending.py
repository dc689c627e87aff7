"""Sending: what happens when the person presses Send. The checks that can refuse a request (models not ready, a
picture for a model that cannot see), the request it is asked with (a ReplyRequestSpec: the generation settings
layered from the chat's settings, the model's defaults and the chat format, the project's instructions, the
models' names), and the turn handed to the conversation, with the composer kept as it was on any problem. In a
project's chat with documents the turn waits for its sources, found off the GUI thread (app.ui.projects.documents);
other chats send at once. GUI thread only.
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import Callable, Optional

from app.engine.config import GenerationConfig
from app.store import StoreError, model_defaults
from app.store.projects.sources import Source
from app.ui.chat.reply_request import ReplyRequestSpec
from app.ui.models.model_session import ModelSession

# `window`: the MainWindow (untyped, as in app_settings.py: importing its class here would import round a circle).


def send_message(window, text: str, on_sent: Optional[Callable[[], None]] = None) -> bool:
    """Store the person's message and ask for a reply, then `on_sent()`; on any problem the composer keeps the text.
    In a chat of a project with documents the message waits for its sources, found off the GUI thread
    (DocumentsController.find_sources); True then means it is on its way, and Stop drops it."""
    documents = window.documents
    spec = None if documents.finding() else _checked_spec(window, text)  # a second Send while one waits: nothing
    if spec is None:
        return False
    # The project's documents: whole where they fit, else this question's passages, numbered (app.ui.projects).
    if documents.find_sources(text, spec.config.max_tokens, partial(_send_found, window, text, on_sent=on_sent)):
        return True
    return _store_and_ask(window, text, spec, (), on_sent)


def _send_found(window, text: str, sources: tuple[Source, ...], on_sent: Optional[Callable[[], None]]) -> None:
    spec = _checked_spec(window, text)  # asked again: the models may have changed while the sources were found
    if spec is not None:
        _store_and_ask(window, text, spec, sources, on_sent)


def _checked_spec(window, text: str) -> Optional[ReplyRequestSpec]:
    """What the composer's message is sent with, or None when it cannot be sent now (nothing to send, a reply
    streaming, or a check that says why: reply_spec)."""
    composer = window.composer
    if window.conversation.is_busy() or not (text.strip() or composer.attachments() or composer.pictures()):
        return None
    return reply_spec(window, bool(composer.pictures()))


def _store_and_ask(
    window, text: str, spec: ReplyRequestSpec, sources: tuple[Source, ...], on_sent: Optional[Callable[[], None]]
) -> bool:
    composer, session = window.composer, window.session
    new_chat = window.chat_settings.for_new_chat(
        session.target_key(), session.draft_key, window.model_bar.speculative()
    )
    try:
        window.conversation.send(
            text,
            spec,
            new_chat,
            window.messages.editing,
            attachments=composer.attachments(),
            pictures=composer.pictures(),
            sources=sources,
        )
    except StoreError as exc:
        window.show_error(f"The message could not be saved, so it was not sent: {exc}")
        return False
    window.messages.edit_sent()
    composer.clear_after_send()
    if on_sent is not None:
        on_sent()
    return True


def reply_spec(window, pictures: bool = False) -> Optional[ReplyRequestSpec]:
    """What a new request is asked with, or None after saying why none can be sent now (`pictures`: the reply
    answers a message with pictures, which a model that cannot see does not; earlier ones are named to it)."""
    session: ModelSession = window.session
    problem = session.send_blocker(window.library_ctl.scanned_once())
    blind = session.picture_blocker() if not problem else ""
    problem = problem or (blind if pictures else "")
    if problem:
        window.show_error(problem)
        return None
    window.error_banner.hide()
    return ReplyRequestSpec(
        generation_config(window),
        window.projects.system_prompt(window.chat_settings.current().system_prompt),
        *session.names(),
        sees_pictures=not blind,
    )


def generation_config(window) -> GenerationConfig:
    """What the next request is sent with: the chat's settings, the Speculative switch and the drafter, under the
    target's own reply defaults, in the chat's prompt format, drafting from history as the app's settings say."""
    session = window.session
    config = window.chat_settings.generation_config(window.model_bar.speculative(), session.drafter())
    config = model_defaults.with_reply_defaults(config, session.defaults_for(session.target_key()))
    return window.chat_format.apply(dataclasses.replace(config, history=window.settings.history_drafting))
