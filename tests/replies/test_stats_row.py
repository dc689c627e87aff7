"""A reply's stats row in words (app.replies.stats)."""

from __future__ import annotations

from app.engine.events import GenerationStats
from app.replies.stats import format_stats


def test_a_reply_of_a_token_or_two_shows_no_writing_speed():
    """Issue 55, item 6: a 1-token reply showed "1.3 tok/s", the prompt's time read as a writing speed."""
    one = format_stats(GenerationStats(tokens=1, tokens_per_second=1.3, stop_reason="stop"))
    assert "tok/s" not in one and one.startswith("1 token")
    assert format_stats(GenerationStats(tokens=40, tokens_per_second=12.5)).startswith("12.5 tok/s  ·  40 tokens")
