"""The one table of what a person reads for each drafter: its label in charts and legends, its name in a sentence,
and what it does in the status line. Every place that names a drafter reads it here, so a drafter is called the
same thing wherever it shows (the codes themselves are app.engine.events.DRAFT_SOURCES)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DrafterWords:
    label: str  # charts, legends, the inspector's counts: "n-gram 3 rounds"
    name: str  # in a sentence: "drafted by n-gram lookup", "n-gram lookup proposed 3 tokens"
    doing: str  # the status line: "Speculating: copying from earlier text ahead"


DRAFTER_WORDS: dict[str, DrafterWords] = {
    "model": DrafterWords("draft model", "the draft model", "the draft model guesses"),
    "ngram": DrafterWords("n-gram", "n-gram lookup", "copying from earlier text"),
    "history": DrafterWords("history", "earlier replies", "copying from your earlier replies"),
}
# A round nobody drafted, as charts and the inspector label it.
PLAIN_LABEL = "plain"


def drafter_name(drafter: str) -> str:
    """A drafter's name in a sentence; an unknown code as it is."""
    words = DRAFTER_WORDS.get(drafter)
    return words.name if words else drafter
