"""Fitting a conversation to the context: the one rule every engine (and the tests' scripted one) applies."""

from __future__ import annotations

from itertools import accumulate
from typing import Callable, Optional, Sequence

from app.engine.errors import PromptTooLongError

# When a chat outgrows the context, the oldest turns are dropped until the prompt fills at most this share of
# it: the next several turns then fit behind the same cut, so the cut (and its notice) comes once in a while, and
# the prompt's start stays the same between cuts, which keeps its KV cache usable.
REFILL = 0.75


def _cuts(body: Sequence[dict]) -> list[int]:
    """How many leading messages of `body` may be dropped: whole turns (a user message and the reply that followed
    it), so the prompt never starts with an orphaned reply, and never the last message."""
    cuts, d = [0], 0
    while len(body) - d > 1:
        d += 2 if body[d].get("role") == "user" and len(body) - d > 2 else 1
        cuts.append(d)
    return cuts


def drop_oldest_turns(
    messages: Sequence[dict],
    budget: int,
    count_tokens: Callable[[list[dict]], int],
    n_ctx: int,
    *,
    estimate: Optional[Callable[[dict], int]] = None,
    at_least: int = 0,
) -> tuple[list[dict], int]:
    """Drop whole oldest turns (never the system prompt, never the last message) until `count_tokens(kept)` is at
    most `budget`. Returns the kept messages and how many were dropped.

    `at_least`: how many the previous request of this conversation dropped; the same turns stay dropped while the
    rest fits, so the prompt keeps its start. A new cut goes down to REFILL of the budget, chosen by `estimate`
    (tokens of one message, cheap and cached by the caller; exact counts of the whole prompt check it), so a
    long chat costs a few prompt renders, not one per dropped turn.
    Raises PromptTooLongError when even the system prompt and the last message alone do not fit.
    """
    system = list(messages[:1]) if messages and messages[0].get("role") == "system" else []
    body = list(messages[len(system) :])
    cuts = _cuts(body)
    start = next((i for i, d in enumerate(cuts) if d >= at_least), len(cuts) - 1)

    def kept(d: int) -> list[dict]:
        return system + body[d:]

    used = count_tokens(kept(cuts[start]))
    if used <= budget:
        return kept(cuts[start]), cuts[start]
    estimate = estimate or (lambda message: count_tokens([message]))
    # remaining[d]: the estimated tokens of body[d:], for every d.
    sizes = [estimate(m) for m in body]
    remaining = list(accumulate(reversed(sizes)))[::-1] + [0]
    fixed = sum(estimate(m) for m in system)
    index = next(
        (i for i in range(start + 1, len(cuts)) if fixed + remaining[cuts[i]] <= REFILL * budget), len(cuts) - 1
    )
    for d in cuts[index:]:
        used = count_tokens(kept(d))
        if used <= budget:
            return kept(d), d
    raise PromptTooLongError(used + (n_ctx - budget), n_ctx)


class SessionCuts:
    """Remembers, per session (one chat), how many oldest messages its last prompt left out, so every engine
    keeps the same turns dropped between cuts. Called from the engine's thread only."""

    def __init__(self):
        self._dropped: dict[str, int] = {}

    def fit(
        self,
        messages: Sequence[dict],
        budget: int,
        count_tokens: Callable[[list[dict]], int],
        n_ctx: int,
        session: str,
        estimate: Optional[Callable[[dict], int]] = None,
    ) -> tuple[list[dict], int]:
        kept, dropped = drop_oldest_turns(
            messages, budget, count_tokens, n_ctx, estimate=estimate, at_least=self._dropped.get(session, 0)
        )
        self._dropped[session] = dropped
        return kept, dropped
