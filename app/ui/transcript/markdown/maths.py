"""Maths in a reply (`$…$`, `$$…$$`, `\\(…\\)`, `\\[…\\]`) as Unicode text: α, ∑, √, x², as LM Studio and Jan users
expect maths to read, without a TeX engine. pylatexenc does the conversion; only the superscripts and subscripts it
leaves as `^`/`_` are written here, and only where every character has a Unicode form (else they stay as written).
Plain Python (no Qt)."""

from __future__ import annotations

import re
from functools import lru_cache

from pylatexenc.latex2text import LatexNodes2Text

# Each opening delimiter (a markdown-it token's markup) and the one that closes it.
CLOSING = {"$": "$", "$$": "$$", "\\(": "\\)", "\\[": "\\]"}
_SUPERSCRIPTS = dict(zip("0123456789+-=()ni", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱ"))
_SUBSCRIPTS = dict(zip("0123456789+-=()aeiknox", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑᵢₖₙₒₓ"))
_SCRIPT = re.compile(r"([\^_])(?:\{([^{}\\]*)\}|([0-9a-zA-Z]))")


def _scripts(match: re.Match) -> str:
    table = _SUPERSCRIPTS if match.group(1) == "^" else _SUBSCRIPTS
    body = match.group(2) if match.group(2) is not None else match.group(3)
    if body and all(ch in table for ch in body):
        # After an empty group, so that a macro before it (`\sum_1`) does not take the letters into its name.
        return "{}" + "".join(table[ch] for ch in body)
    return match.group(0)


@lru_cache(maxsize=1)
def _converter() -> LatexNodes2Text:
    return LatexNodes2Text(math_mode="text", strict_latex_spaces="based-on-source")


@lru_cache(maxsize=4096)  # a reply re-parsed while it streams converts each span once
def maths_text(latex: str) -> str:
    """The LaTeX of one maths span as Unicode text; the LaTeX itself when it cannot be read."""
    try:
        text = _converter().latex_to_text(_SCRIPT.sub(_scripts, latex))
    except Exception:  # a malformed span is shown as written, never a crash
        return latex.strip()
    return " ".join(text.split()) or latex.strip()
