"""A reply's stats and models in words, as the transcript and an exported chat both write them (no Qt)."""

from __future__ import annotations

from typing import Optional, Sequence

from app.common.units import plural
from app.engine.events import GenerationStats
from app.replies.status_words import drafted_words
from app.store.provenance import RoundRecord


def model_label(target_name: Optional[str], draft_name: Optional[str]) -> str:
    if not target_name:
        return "Assistant"
    return f"{target_name}  +  {draft_name}" if draft_name else target_name


# Below this many tokens a reply's rate is mostly the time to its first token, not a writing speed: none is shown.
MIN_RATE_TOKENS = 4


def format_stats(stats: GenerationStats, rounds: Sequence[RoundRecord] = ()) -> str:
    """The stats row under a finished reply: "41.3 tok/s · 256 tokens · 68% accepted (120/176 drafted by n-gram lookup) ·
    0.21 s to first token"; `rounds`, the reply's, say who drafted and, without drafts, why none. A reply of fewer
    than MIN_RATE_TOKENS tokens has no rate."""
    rate = [f"{stats.tokens_per_second:.1f} tok/s"] if stats.tokens >= MIN_RATE_TOKENS else []
    parts = [
        *rate,
        plural(stats.tokens, "token"),
        drafted_words(stats.drafted, stats.accepted, (r.drafter for r in rounds), (r.kind for r in rounds)),
    ]
    if stats.reasoning_tokens:  # "thinking 412 · 81% accepted, answer 96 · 40%": speculation on each part
        parts.append(thinking_split(stats))
    if stats.ttft_s:
        parts.append(f"{stats.ttft_s:.2f} s to first token")
    if stats.prompt_tokens:  # "read 12 new tokens, 902 from cache": the conversation's KV cache kept or not
        parts.append(f"read {stats.prompt_tokens - stats.prompt_cached} new tokens, {stats.prompt_cached} from cache")
    reason = {
        "cancelled": "stopped",
        "max_tokens": "hit the max tokens limit",
        "context_full": "context full",
        "error": "ended by an error",
        "interrupted": "interrupted: SpecChat closed while it was written",
    }.get(stats.stop_reason)
    if reason:
        parts.append(reason)
    return "  ·  ".join(parts)


def _share(accepted: int, drafted: int) -> str:
    return f"{100 * accepted / drafted:.0f}% accepted" if drafted else "none drafted"


def thinking_split(stats: GenerationStats) -> str:
    """A thinking reply's tokens and acceptance in its two parts, e.g. "thinking 412 (81% accepted), answer 96
    (40% accepted)"; the stats row and the inspector both say it."""
    answer = max(0, stats.tokens - stats.reasoning_tokens)
    thinking = f"thinking {stats.reasoning_tokens}"
    if not stats.drafted:
        return f"{thinking}, answer {answer}"
    return (
        f"{thinking} ({_share(stats.reasoning_accepted, stats.reasoning_drafted)}), answer {answer} "
        f"({_share(stats.accepted - stats.reasoning_accepted, stats.drafted - stats.reasoning_drafted)})"
    )
