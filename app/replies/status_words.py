"""The status line in a person's words: what speculation is doing now and why, from the engine's round reason
(app.engine.speculation: "ngram draft of 23: expected 1.40x plain") or a change of CPU threads. Each is one short
sentence for the line and the details for its tooltip. No Qt.

The controller's acceptance figures are running estimates over recent replies, not the current reply's share; the
sentence never quotes them as the reply's (the readout beside the legend gives the reply's own).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from app.common.units import plural

# Where drafting pays on a CPU: text that repeats, so tokens are copied rather than guessed.
WHAT_PAYS = ("Drafting pays here on edits and repeated text: attach the file you are editing, or ask for changes "
             "to text already in the chat.")
DRAFTERS = {"model": "the draft model guesses", "ngram": "copying from earlier text", "history":
            "copying from your earlier replies"}


@dataclass(frozen=True)
class StatusWords:
    line: str  # one sentence, shown whole where there is room
    details: str  # the tooltip: the sentence again, what would pay, and the engine's own figures


def in_words(reason: str) -> StatusWords:
    """The status line for one engine reason ("" stays "")."""
    text = reason.strip()
    if not text:
        return StatusWords("", "")
    low = text.lower()
    line, hint = _sentence(text, low)
    if line is None:
        line = text[:1].upper() + text[1:]
    details = "\n\n".join(part for part in (line, hint, f"The engine's note: {text}") if part)
    return StatusWords(line, details)


def _sentence(text: str, low: str) -> tuple[str | None, str]:
    match = re.match(r"(model|ngram|history) draft of (\d+): expected ([\d.]+)x plain", low)
    if match:
        source, k, gain = match.group(1), int(match.group(2)), float(match.group(3))
        return (f"Speculating: {DRAFTERS[source]} ahead, up to {plural(k, 'token')} a round, which should make "
                f"this part about {gain:.1f}× as fast as writing alone."), ""
    match = re.match(r"timing one token at (\d+) cpu thread", low)
    if match:
        return (f"Measuring how fast this machine writes one token on {plural(int(match.group(1)), 'CPU thread')}, "
                "to judge whether drafting pays."), ""
    if low.startswith("speculation paused: on this machine verifying costs more"):
        return ("Speculation paused: on this machine checking a draft costs about as much as writing its tokens, "
                "so guessing ahead would be slower here."), WHAT_PAYS
    if low.startswith("speculation paused"):
        return ("Speculation paused: in this text too few drafted tokens were being kept to save time; it tries "
                "again now and then."), WHAT_PAYS
    if low.startswith("probing"):
        return "Trying a short draft, to see whether the text has become predictable again.", ""
    if low.startswith("nothing to draft from"):
        return "Writing without drafts: there is no earlier text to copy from and no draft model.", WHAT_PAYS
    if low.startswith("no room to speculate"):
        return "Writing without drafts: the reply is at its length or context limit.", ""
    if low.startswith("no earlier occurrence"):
        return "Nothing earlier repeats the last words, so there is nothing to copy this round.", WHAT_PAYS
    match = re.match(r"fixed draft length (\d+)", low)
    if match:
        return f"A fixed draft length of {plural(int(match.group(1)), 'token')}, chosen for this chat.", ""
    if low.startswith("speculation is off"):
        return "Speculation is off for this chat: the model writes every token itself.", ""
    match = re.match(r"(\d+) → (\d+) cpu threads: (.*)", text, flags=re.IGNORECASE)
    if match:
        before, after, why = int(match.group(1)), int(match.group(2)), match.group(3)
        return f"Now using {plural(after, 'CPU thread')} instead of {before}: {why}.", ""
    return None, ""
