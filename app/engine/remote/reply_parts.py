"""A remote reply's two parts, thinking and answer, counted as its tokens arrive: their texts, the thinking's tokens
and drafts, and when the answer began, for the FinishedEvent and the stats' reasoning_* fields.

A round's drafts count for the part of the first token that carries its index (its accepted drafts, or the
target's own token after a refused draft): a round is verified before its tokens are sent, so it belongs where
they land.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional

from app.engine.events import TokenPart


@dataclass
class ReplyParts:
    """One reply's parts; fed on the thread that reads its stream."""

    answer: list[str] = field(default_factory=list)
    reasoning: list[str] = field(default_factory=list)
    reasoning_tokens: int = 0
    reasoning_drafted: int = 0
    reasoning_accepted: int = 0
    answer_at: Optional[float] = None  # when the answer's first text arrived (monotonic)
    _round_drafted: dict[int, int] = field(default_factory=dict)  # rounds seen, not yet placed in a part
    server_reasoning_tokens: Optional[int] = None  # the server's own count (usage), where it sends one

    def on_round(self, index: int, drafted: int) -> None:
        self._round_drafted[index] = drafted

    def on_token(self, text: str, part: TokenPart, counted: bool, from_draft: bool, round_index: int) -> None:
        drafted_in_round = self._round_drafted.pop(round_index, 0)
        if part == "reasoning":
            self.reasoning.append(text)
            self.reasoning_tokens += int(counted)
            self.reasoning_accepted += int(from_draft and counted)
            self.reasoning_drafted += drafted_in_round
        else:
            self.answer.append(text)
            if text and self.answer_at is None:
                self.answer_at = time.monotonic()

    @property
    def text(self) -> str:
        return "".join(self.answer)

    @property
    def reasoning_text(self) -> str:
        return "".join(self.reasoning)

    def stats_fields(self, first_at: Optional[float], ended: float, finish_reason: str) -> dict:
        """GenerationStats' reasoning_* fields. The thinking lasts from the first token to the answer's first (or
        to the end); a reply that thought and was cut off by its length before any answer ended in its thinking."""
        if not self.reasoning_tokens and not self.reasoning_text:
            return {}
        until = self.answer_at if self.answer_at is not None else ended
        return {
            "reasoning_tokens": self.server_reasoning_tokens or self.reasoning_tokens,
            "reasoning_drafted": self.reasoning_drafted,
            "reasoning_accepted": self.reasoning_accepted,
            "reasoning_s": max(0.0, until - first_at) if first_at is not None else 0.0,
            "ended_in_reasoning": self.answer_at is None and finish_reason == "length",
        }
