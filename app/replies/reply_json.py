"""A finished reply as `specchat-cli generate` reports it: the `--json` document (its text, reasoning, tokens, rounds
and statistics) and the statistics line printed after a streamed reply. No Qt."""

from __future__ import annotations

from typing import Any

from app.engine.events import FinishedEvent, GenerationStats


# The statistics `generate --json` prints, by their GenerationStats names.
JSON_STATS = (
    "tokens",
    "tokens_per_second",
    "ttft_s",
    "drafted",
    "accepted",
    "acceptance_rate",
    "mean_accepted_run",
    "rounds",
    "stop_reason",
    "reasoning_tokens",
    "reasoning_drafted",
    "reasoning_accepted",
    "reasoning_s",
    "ended_in_reasoning",
    "prompt_tokens",
    "prompt_cached",
    "prompt_eval_s",
    "kept_states",
    "kept_bytes",
    "kept_budget_bytes",
)


def reply_json(finished: FinishedEvent, tokens: list[dict], rounds: list[dict], split: dict) -> dict:
    """The reply as `--json` prints it: per token its drafter and round (an index into "rounds"); per round every
    proposed id, the refused ones too; and the statistics."""
    stats = finished.stats
    numbers: dict[str, Any] = {k: getattr(stats, k) for k in JSON_STATS}
    numbers["draft_len_histogram"] = stats.draft_len_histogram
    numbers["split"] = split
    # The prompt's tokens read now, beside prompt_cached: those whose KV cache was kept (a saved state).
    numbers["prompt_read"] = stats.prompt_tokens - stats.prompt_cached
    reply = {"text": finished.text, "reasoning": reasoning_json(finished), "tokens": tokens, "rounds": rounds}
    reply["stats"] = numbers
    return reply


def summary_line(stats: GenerationStats, speculative: bool) -> str:
    """The reply's statistics in the line `generate` prints to stderr after it."""
    summary = f"{stats.tokens} tokens, {stats.tokens_per_second:.1f} tok/s, ttft {stats.ttft_s:.2f}s"
    if speculative:
        summary += f", acceptance {stats.acceptance_rate:.0%} ({stats.accepted}/{stats.drafted}), {stats.rounds} rounds"
    if stats.reasoning_tokens:
        summary += f"; thinking {stats.reasoning_tokens} tokens in {stats.reasoning_s:.1f}s"
        if speculative and stats.reasoning_drafted:
            summary += (
                f" (acceptance {stats.reasoning_accepted / stats.reasoning_drafted:.0%}, answer "
                f"{answer_acceptance(stats)})"
            )
    return summary


def reasoning_json(finished: FinishedEvent) -> dict[str, Any]:
    """`generate --json`'s "reasoning": the thinking's text and its tokens, drafts and seconds."""
    stats = finished.stats
    return {
        "text": finished.reasoning,
        "tokens": stats.reasoning_tokens,
        "drafted": stats.reasoning_drafted,
        "accepted": stats.reasoning_accepted,
        "seconds": round(stats.reasoning_s, 3),
        "ended_in_reasoning": stats.ended_in_reasoning,
    }


def answer_acceptance(stats: GenerationStats) -> str:
    """The answer's own acceptance, its drafts apart from the thinking's."""
    drafted, accepted = stats.drafted - stats.reasoning_drafted, stats.accepted - stats.reasoning_accepted
    return f"{accepted / drafted:.0%}" if drafted else "no drafts"
