"""Fitting a conversation to the context: the one rule every engine (and the tests' scripted one) applies."""

from __future__ import annotations

from typing import Callable, Sequence

from app.engine.errors import PromptTooLongError


def drop_oldest_turns(messages: Sequence[dict], budget: int, count_tokens: Callable[[list[dict]], int],
                      n_ctx: int) -> tuple[list[dict], int]:
    """Drop whole oldest turns (never the system prompt, never the last message) until `count_tokens(kept)` is at
    most `budget`. Returns the kept messages and how many were dropped.

    A turn is a user message and the reply that followed it, so the prompt never starts with an orphaned reply.
    Raises PromptTooLongError when even the system prompt and the last message alone do not fit.
    """
    kept = list(messages)
    dropped = 0
    while (used := count_tokens(kept)) > budget:
        system = 1 if kept and kept[0].get("role") == "system" else 0
        if len(kept) - system <= 1:
            raise PromptTooLongError(used + (n_ctx - budget), n_ctx)
        n = 2 if kept[system].get("role") == "user" and len(kept) - system > 2 else 1
        del kept[system:system + n]
        dropped += n
    return kept, dropped
