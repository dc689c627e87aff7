"""Syntax colours of code blocks from Pygments: a foreground colour per character (plain Python, no Qt).

Only the foreground is coloured; the background stays free for the provenance highlight.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

from pygments.lexers import get_lexer_by_name
from pygments.styles import get_style_by_name
from pygments.token import Token
from pygments.util import ClassNotFound

# Pygments' default style: dark, saturated colours that stay readable on the light code background and on both
# highlight colours.
STYLE_NAME = "default"


@lru_cache(maxsize=64)
def _lexer(language: str):
    try:
        return get_lexer_by_name(language, stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        return None


@lru_cache(maxsize=1)
def _style_colours() -> dict:
    return {token: f"#{spec['color']}" for token, spec in get_style_by_name(STYLE_NAME) if spec["color"]}


@lru_cache(maxsize=512)
def _colour(token_type) -> Optional[str]:
    if token_type in Token.Text.Whitespace:
        return None  # nothing to colour, and one format fewer
    colours = _style_colours()
    while token_type is not None and token_type is not Token:
        if token_type in colours:
            return colours[token_type]
        token_type = token_type.parent
    return None


def code_colours(code: str, language: str) -> Optional[list[Optional[str]]]:
    """Per character of `code`, its colour ("#rrggbb") or None; None for a language Pygments does not know (no
    guessing: a wrong guess colours prose as code)."""
    lexer = _lexer(language.strip().lower()) if language.strip() else None
    if lexer is None:
        return None
    colours: list[Optional[str]] = [None] * len(code)
    for index, token_type, value in lexer.get_tokens_unprocessed(code):
        colour = _colour(token_type)
        if colour is not None:
            end = min(len(code), index + len(value))
            colours[index:end] = [colour] * (end - index)
    return colours
