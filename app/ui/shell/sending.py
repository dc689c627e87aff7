"""Sending: what happens when the person presses Send. The checks that can refuse a request (models not ready, a
picture for a model that cannot see), the request it is asked with (a ReplyRequestSpec: the generation settings
layered from the chat's settings, the model's defaults and the chat format, the project's instructions, the
models' names), and the turn handed to the conversation, with the composer kept as it was on any problem.
GUI thread only.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from app.engine.config import GenerationConfig
from app.store import StoreError, model_defaults
from app.ui.chat.reply_request import ReplyRequestSpec
from app.ui.models.model_session import ModelSession

# `window`: the MainWindow (untyped, as in app_settings.py: importing its class here would import round a circle).


def send_message(window, text: str) -> bool:
    """Store the person's message and ask for a reply; on any problem the composer keeps the text."""
    composer, conversation = window.composer, window.conversation
    attachments, pictures = composer.attachments(), composer.pictures()
    if conversation.is_busy() or not (text.strip() or attachments or pictures):
        return False
    spec = reply_spec(window, bool(pictures))
    if spec is None:
        return False
    session = window.session
    new_chat = window.chat_settings.for_new_chat(
        session.target_key(), session.draft_key, window.model_bar.speculative()
    )
    # The project's documents: whole where they fit, else this question's passages, numbered (app.ui.projects).
    sources = window.documents.sources_for(text, spec.config.max_tokens)
    try:
        conversation.send(
            text, spec, new_chat, window.messages.editing, attachments=attachments, pictures=pictures, sources=sources
        )
    except StoreError as exc:
        window.show_error(f"The message could not be saved, so it was not sent: {exc}")
        return False
    window.messages.edit_sent()
    composer.clear_after_send()
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
