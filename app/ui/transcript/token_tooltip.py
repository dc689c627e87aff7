"""What hovering a token says: who wrote it and, when its round is known, what was proposed, what the target
refused (struck through) and what it wrote instead. Qt rich text, built only when asked (plain Python, no Qt)."""

from __future__ import annotations

from html import escape
from typing import Optional, Sequence

from app.common.units import plural
from app.replies.drafter_words import DRAFTER_WORDS
from app.store.provenance import RoundRecord

DRAFT_TOOLTIP = "Draft model: proposed by the draft model and accepted by the target"
NGRAM_TOOLTIP = "N-gram copy: found in the earlier text by n-gram lookup and accepted by the target"
HISTORY_TOOLTIP = "History: how earlier replies went on from here, accepted by the target"
TARGET_TOOLTIP = "Target: written by the target model itself"
ORIGIN_TOOLTIPS = {"draft": DRAFT_TOOLTIP, "ngram": NGRAM_TOOLTIP, "history": HISTORY_TOOLTIP, "target": TARGET_TOOLTIP}


def token_text(text: str) -> str:
    """A token's text for rich text, with its spaces kept and line breaks visible."""
    return escape(text.replace("\n", "↵").replace("\t", "⇥"))


def token_tooltip(origin: str, round_index: int, rounds: Optional[Sequence[RoundRecord]], href: str = "") -> str:
    lines = [escape(ORIGIN_TOOLTIPS.get(origin, TARGET_TOOLTIP))]
    if rounds is not None and 0 <= round_index < len(rounds):
        lines.extend(round_lines(round_index, rounds[round_index]))
    if href:
        lines.append(f"Link to {escape(href)}")
    return _html(lines)


def refused_tooltip(round_index: int, rounds: Optional[Sequence[RoundRecord]]) -> str:
    """The tooltip of ghost text: a refused proposal shown inline."""
    lines = ["Refused: proposed, but the target disagreed and wrote its own token"]
    if rounds is not None and 0 <= round_index < len(rounds):
        lines.extend(round_lines(round_index, rounds[round_index]))
    return _html(lines)


def round_lines(round_index: int, record: RoundRecord) -> list[str]:
    words = DRAFTER_WORDS.get(record.drafter)
    if words is None or not record.proposed_text:
        return [f"Round {round_index + 1}: no draft (plain decoding)"]
    kept = record.kept_text
    refused = record.refused_text
    lines = [
        f"Round {round_index + 1}: {escape(words.name)} proposed {plural(len(record.proposed_text), 'token')} "
        f"(up to {record.k}), the target kept {record.kept}",
        f'Proposed: <span style="white-space:pre">{token_text(kept)}'
        + (f"<s>{token_text(refused)}</s>" if refused else "")
        + "</span>",
    ]
    if record.own >= 0:
        said = "Instead the target wrote" if refused else "Then the target added"
        lines.append(f'{said}: <b style="white-space:pre">{token_text(record.own_text)}</b>')
    return lines


def _html(lines: list[str]) -> str:
    return "<p style='white-space:pre-wrap'>" + "<br>".join(lines) + "</p>"
