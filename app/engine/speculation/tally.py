"""What the rounds of one reply drafted and kept, and the reply's statistics that follow from it.

The local decoders (app.engine.local.decoding.reply) and a server's replies (app.engine.remote.reply_stream) count their
rounds here, so acceptance, the mean accepted run and the draft-length histogram mean the same for every engine.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from app.engine.events import Drafter


@dataclass
class Tally:
    """What the rounds of one reply drafted and kept."""

    drafted: int = 0
    accepted: int = 0
    rounds: int = 0
    draft_rounds: int = 0  # the rounds that drafted at least one token
    histogram: dict[int, int] = field(default_factory=dict)  # draft length -> rounds
    accepted_by: dict[str, int] = field(default_factory=dict)  # drafter -> accepted tokens

    def add(self, drafted: int, accepted: int, drafter: Drafter) -> None:
        self.rounds += 1
        if drafted:
            self.accepted_by[drafter] = self.accepted_by.get(drafter, 0) + accepted
        self.drafted += drafted
        self.accepted += accepted
        self.draft_rounds += bool(drafted)
        self.histogram[drafted] = self.histogram.get(drafted, 0) + 1

    def stats_fields(self) -> dict:
        """GenerationStats' speculation fields, by name."""
        return dict(
            drafted=self.drafted,
            accepted=self.accepted,
            acceptance_rate=self.accepted / self.drafted if self.drafted else 0.0,
            mean_accepted_run=self.accepted / self.draft_rounds if self.draft_rounds else 0.0,
            rounds=self.rounds,
            draft_len_histogram=dict(sorted(self.histogram.items())),
            accepted_by=dict(self.accepted_by),
        )
