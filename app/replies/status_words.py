"""What speculation is doing, in a person's words, read from the engine's typed records: a round's kind, drafter,
draft length and expected kept tokens (app.engine.events.RoundEvent, as the controller planned it), a change of CPU
threads (ThreadsEvent), and a finished reply's rounds. The status line, the stats row and the Speculate-anyway offer
all read these; none of them reads the controller's English reason, which stays the engine's note in the tooltip.
No Qt.

The controller's acceptance figures are running estimates over recent replies, not the current reply's share; the
sentence never quotes them as the reply's (the readout beside the legend gives the reply's own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Optional

from app.common.units import plural
from app.engine.events import COPYING_SOURCES, GenerationStats, RoundEvent, ThreadsEvent
from app.replies.drafter_words import DRAFTER_WORDS, drafter_name

# Where drafting pays on a CPU: text that repeats, so tokens are copied rather than guessed.
WHAT_PAYS = (
    "Drafting pays here on edits and repeated text: attach the file you are editing, or ask for changes "
    "to text already in the chat."
)
# A fixed draft length (Chat settings, or Speculate anyway): its rounds, and the footer once it is chosen, say this.
FIXED = "Drafting every round, at the draft length set for this chat, even where that is slower."
# Round kinds in which the controller chose not to draft because it would not pay: the moment to offer drafting anyway.
NOT_PAYING = frozenset({"paused", "costly"})


@dataclass(frozen=True)
class StatusWords:
    line: str  # one sentence, shown whole where there is room
    details: str  # the tooltip: the sentence again, what would pay, and the engine's own note
    kind: str = ""  # the RoundKind the sentence says ("" for a sentence of the window's, or a change of threads)


def round_words(event: RoundEvent, speculative: bool = True, drafting: Iterable[str] = ()) -> StatusWords:
    """The status line for a round, from its kind and plan; `speculative` False: the chat has speculation off.
    `drafting`: the drafters at work in this reply (RoundEvent.drafter of its rounds so far, and the draft model
    where the request may use it), so that a pause names the drafter it stops and what still drafts."""
    line, hint = _sentence(event, speculative, frozenset(drafting))
    details = "\n\n".join(
        part for part in (line, hint, f"The engine's note: {event.reason}" if event.reason else "") if part
    )
    return StatusWords(line, details, event.kind)


def _sentence(event: RoundEvent, speculative: bool, drafting: frozenset[str] = frozenset()) -> tuple[str, str]:
    kind, k = event.kind, event.draft_len
    if not speculative:
        return "Speculation is off for this chat: the model writes every token itself.", ""
    if kind == "draft":
        words = DRAFTER_WORDS.get(event.drafter or "")
        drafter = words.doing if words else "drafting"
        expected = f", expecting about {event.expected:.1f} of them kept" if event.expected else ""
        return f"Speculating: {drafter} ahead, up to {plural(k, 'token')} a round{expected}.", ""
    if kind == "fixed":
        return FIXED, ""
    if kind == "probe":
        return "Trying a short draft, to see whether the text has become predictable again.", ""
    if kind == "timing":
        threads = f" on {plural(event.threads, 'CPU thread')}" if event.threads else ""
        return f"Measuring how fast this machine writes one token{threads}, to judge whether drafting pays.", ""
    if kind == "costly":
        return (
            "Speculation paused: on this machine checking a draft costs about as much as writing its tokens, "
            "so guessing ahead would be slower here."
        ), WHAT_PAYS
    if kind == "paused" and "model" in drafting and drafting.intersection(COPYING_SOURCES):
        # The draft model is what stopped paying; copying drafts on in the rounds where it has text to copy, so
        # advice to give it text to copy would be advice already followed.
        still = " and ".join(DRAFTER_WORDS[d].doing for d in COPYING_SOURCES if d in drafting)
        return (
            f"Draft model paused: too few of its guesses were being kept to save time; {still} goes on. "
            "It tries the draft model again now and then."
        ), ""
    if kind == "paused":
        return (
            "Speculation paused: in this text too few drafted tokens were being kept to save time; it tries "
            "again now and then."
        ), WHAT_PAYS
    if kind == "server":
        return "The server drafts and checks its own tokens.", ""
    if kind == "batch":
        drafted = f"drafting {plural(k, 'token')} this round" if k else "no draft this round"
        return (
            f"Other requests are being answered beside this chat: {drafted}, where alone it would draft more, "
            "so that no request in the batch writes slower for it."
        ), ""
    return "Writing without drafts this round: nothing to draft from, or no room left.", WHAT_PAYS


def threads_words(event: ThreadsEvent) -> StatusWords:
    """A change of CPU threads, e.g. "Now using 1 CPU thread instead of 2: another program is busy."."""
    line = f"Now using {plural(event.after, 'CPU thread')} instead of {event.before}: {event.reason}."
    return StatusWords(line, line)


def sentence(line: str) -> StatusWords:
    """A sentence of the window's own for the status line ("" clears it)."""
    return StatusWords(line, line)


def drafted_words(drafted: int, accepted: int, drafters: Iterable[str], kinds: Iterable[str]) -> str:
    """A reply's speculation for its stats row, read from its rounds' drafters and kinds: "68% accepted (120/176
    drafted by the draft model)"; without drafts, why none: "no drafts: speculation paused here" (it would not pay),
    "no drafts (plain decoding)"."""
    if drafted:
        names = [words.name for d, words in DRAFTER_WORDS.items() if d in set(drafters)]
        by = f" by {' and '.join(names)}" if names else ""
        return f"{100 * accepted / drafted:.0f}% accepted ({accepted}/{drafted} drafted{by})"
    kinds = set(kinds)
    if kinds & (NOT_PAYING | {"timing"}):
        return "no drafts: speculation paused here"
    if "batch" in kinds:
        return "no drafts: other requests shared the batch"
    if kinds - {"unavailable", ""}:
        return "no drafts"
    return "no drafts (plain decoding)"


def kept_words(stats: GenerationStats) -> str:
    """What a reply's drafts gave, by drafter, for a log or a one-line report: "412 of 460 drafted tokens kept
    (n-gram 398, the draft model 14)"; "no drafts" where nothing was drafted."""
    if not stats.drafted:
        return "no drafts"
    by = ", ".join(f"{drafter_name(d)} {n}" for d, n in stats.accepted_by.items() if n)
    return f"{stats.accepted} of {stats.drafted} drafted tokens kept" + (f" ({by})" if by else "")


def offers_anyway(words: Optional[StatusWords]) -> bool:
    """Whether the line says the controller chose not to draft because it would not pay."""
    return words is not None and words.kind in NOT_PAYING
