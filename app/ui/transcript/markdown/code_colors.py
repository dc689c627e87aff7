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

# Each theme names its Pygments style (app/ui/widgets/themes.py): "default" on light, "github-dark" on dark.
DEFAULT_STYLE = "default"


@lru_cache(maxsize=64)
def _lexer(language: str):
    try:
        return get_lexer_by_name(language, stripnl=False, stripall=False, ensurenl=False)
    except ClassNotFound:
        return None


@lru_cache(maxsize=4)
def _style_colours(style_name: str) -> dict:
    return {token: f"#{spec['color']}" for token, spec in get_style_by_name(style_name) if spec["color"]}


@lru_cache(maxsize=1024)
def _colour(token_type, style_name: str) -> Optional[str]:
    if token_type in Token.Text.Whitespace:
        return None  # nothing to colour, and one format fewer
    colours = _style_colours(style_name)
    while token_type is not None and token_type is not Token:
        if token_type in colours:
            return colours[token_type]
        token_type = token_type.parent
    return None


def code_colours(code: str, language: str, style_name: str = DEFAULT_STYLE) -> Optional[list[Optional[str]]]:
    """Per character of `code`, its colour ("#rrggbb") in the Pygments style `style_name`, or None; None for a
    language Pygments does not know (no guessing: a wrong guess colours prose as code)."""
    lexer = _lexer(language.strip().lower()) if language.strip() else None
    if lexer is None:
        return None
    colours: list[Optional[str]] = [None] * len(code)
    for index, token_type, value in lexer.get_tokens_unprocessed(code):
        colour = _colour(token_type, style_name)
        if colour is not None:
            end = min(len(code), index + len(value))
            colours[index:end] = [colour] * (end - index)
    return colours
