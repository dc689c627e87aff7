"""Log-probabilities in OpenAI's two shapes: chat's `logprobs.content` list, and completions' parallel lists.

Each value is the target's own log-probability at the token's position (app.engine.events.TokenChoice), the
positions of drafted tokens included: the verify batch held the target's row for each of them.
"""

from __future__ import annotations

from typing import Sequence

from app.engine.events import TokenChoice, TokenLogprobs


def _token(choice: TokenChoice) -> str:
    return choice.piece.decode("utf-8", errors="replace")


def _entry(choice: TokenChoice) -> dict:
    return {"token": _token(choice), "logprob": choice.logprob, "bytes": list(choice.piece)}


def chat_logprobs(items: Sequence[TokenLogprobs]) -> dict:
    """Chat's `choice.logprobs`: per token its text, log-probability, bytes and the likeliest tokens there."""
    return {
        "content": [{**_entry(item.chosen), "top_logprobs": [_entry(c) for c in item.top]} for item in items],
        "refusal": None,
    }


def completion_logprobs(items: Sequence[TokenLogprobs], text_offset: int) -> dict:
    """Completions' `choice.logprobs`: tokens, their log-probabilities, the likeliest tokens at each position (as
    {token: logprob}) and where each token starts in the choice's text (from `text_offset`)."""
    offsets, at = [], text_offset
    for item in items:
        offsets.append(at)
        at += len(_token(item.chosen))
    return {
        "tokens": [_token(item.chosen) for item in items],
        "token_logprobs": [item.chosen.logprob for item in items],
        "top_logprobs": [{_token(c): c.logprob for c in item.top} for item in items],
        "text_offset": offsets,
    }
