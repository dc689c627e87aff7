"""How speculation did on a reply's thinking and on its answer: tokens, time and acceptance by drafter for each
part, and how much of the answer the copying drafters took from the reply's own reasoning.

A round counts to the part its first token falls in (as GenerationStats' reasoning_drafted does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from app.engine.events import (
    COPYING_SOURCES,
    DRAFT_SOURCES,
    EngineEvent,
    FinishedEvent,
    RoundEvent,
    TokenEvent,
    TokenPart,
)


@dataclass
class PartTally:
    """One part of one or more replies."""

    tokens: int = 0
    seconds: float = 0.0  # the rounds' time (drafting and verifying)
    drafted: dict[str, int] = field(default_factory=dict)  # drafter -> tokens drafted
    accepted: dict[str, int] = field(default_factory=dict)

    @property
    def tokens_per_second(self) -> float:
        return self.tokens / self.seconds if self.tokens and self.seconds > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        by_drafter = {
            d: {
                "drafted": self.drafted[d],
                "accepted": self.accepted.get(d, 0),
                "acceptance_rate": round(self.accepted.get(d, 0) / self.drafted[d], 3),
            }
            for d in DRAFT_SOURCES
            if self.drafted.get(d)
        }
        return {
            "tokens": self.tokens,
            "seconds": round(self.seconds, 3),
            "tokens_per_second": round(self.tokens_per_second, 2),
            "by_drafter": by_drafter,
        }


@dataclass
class ThinkingShare:
    """Tallies replies' events by part; feed it the split events (TokenEvent.part told) of each reply in turn."""

    reasoning: PartTally = field(default_factory=PartTally)
    answer: PartTally = field(default_factory=PartTally)
    # Answer tokens the n-gram or history drafter proposed in runs found as they are in the reply's reasoning.
    copied_from_reasoning: int = 0
    _round: dict[int, RoundEvent] = field(default_factory=dict)
    _counted: set[int] = field(default_factory=set)
    _reasoning_ids: list[int] = field(default_factory=list)
    _runs: dict[int, list[int]] = field(default_factory=dict)  # answer round -> its accepted copied token ids

    def part(self, name: TokenPart) -> PartTally:
        return self.reasoning if name == "reasoning" else self.answer

    def feed(self, event: EngineEvent) -> None:
        if isinstance(event, RoundEvent):
            self._round[event.index] = event
        elif isinstance(event, TokenEvent):
            self._token(event)
        elif isinstance(event, FinishedEvent):
            self._end_reply()

    def _token(self, event: TokenEvent) -> None:
        if event.token_id < 0:
            return
        tally = self.part(event.part)
        tally.tokens += 1
        if event.part == "reasoning":
            self._reasoning_ids.append(event.token_id)
        round_ = self._round.get(event.round)
        if round_ is not None and event.round not in self._counted:
            self._counted.add(event.round)
            tally.seconds += round_.time_s
            if round_.drafter != "none" and round_.drafted:
                tally.drafted[round_.drafter] = tally.drafted.get(round_.drafter, 0) + round_.drafted
                tally.accepted[round_.drafter] = tally.accepted.get(round_.drafter, 0) + round_.accepted
        if event.part == "answer" and event.source == "draft" and event.drafter in COPYING_SOURCES:
            self._runs.setdefault(event.round, []).append(event.token_id)

    def _end_reply(self) -> None:
        text = self._reasoning_ids
        for run in self._runs.values():
            if any(text[i : i + len(run)] == run for i in range(len(text) - len(run) + 1)):
                self.copied_from_reasoning += len(run)
        self._round, self._counted, self._reasoning_ids, self._runs = {}, set(), [], {}

    def to_dict(self) -> dict[str, Any]:
        return {
            "reasoning": self.reasoning.to_dict(),
            "answer": self.answer.to_dict(),
            "answer_copied_from_reasoning": self.copied_from_reasoning,
        }
