"""Tokenizing a chat prompt so that only the chat template's own markup becomes control tokens.

llama.cpp's tokenizer turns every literal "<|im_start|>" in a text into the control token when asked to parse
special tokens, so a message that contains one could forge a system turn. Here the text is cut only at the control
tokens that lie in the spans the template wrote (app.engine.local.chat_format.RenderedPrompt.markup); every stretch in
between, template text and message content alike, is tokenized as plain text. That is what llama.cpp does itself
with special parsing on, so an ordinary chat gets exactly the tokens it always did.

Some tokens llama.cpp makes of their literal text even as plain text ("user-defined" ones, such as Qwen's
<tool_call>). Where such a text stands in a message (outside the template's markup), its first character is
tokenized apart from the rest, so a message cannot forge a tool call; the template's own ones stay whole.
"""

from __future__ import annotations

import re
import weakref
from typing import Optional, Sequence

from app.engine.local.llama_model import LoadedModel

_patterns: weakref.WeakKeyDictionary[LoadedModel, Optional[re.Pattern]] = weakref.WeakKeyDictionary()
_user_defined: weakref.WeakKeyDictionary[LoadedModel, Optional[re.Pattern]] = weakref.WeakKeyDictionary()


def _user_defined_pattern(model: LoadedModel) -> Optional[re.Pattern]:
    if model not in _user_defined:
        texts = model.user_defined_tokens()
        _user_defined[model] = re.compile("|".join(re.escape(t) for t in texts)) if texts else None
    return _user_defined[model]


def _plain(model: LoadedModel, text: str, start: int, end: int, markup: Sequence[tuple[int, int]]) -> list[int]:
    """Tokens of text[start:end] as plain text, no user-defined token made of a message's characters."""
    pattern = _user_defined_pattern(model)
    tokens: list[int] = []
    cursor = start
    if pattern is not None:
        for match in pattern.finditer(text, start, end):
            if match.start() < cursor or any(a <= match.start() < b for a, b in markup):
                continue  # the template wrote it: it stays the token
            split = match.start() + 1
            tokens += model.tokenize(text[cursor:split], add_special=False, parse_special=False)
            cursor = split
    if cursor < end:
        tokens += model.tokenize(text[cursor:end], add_special=False, parse_special=False)
    return tokens


def _control_pattern(model: LoadedModel) -> Optional[re.Pattern]:
    if model not in _patterns:
        texts = sorted(model.control_tokens(), key=len, reverse=True)  # longest first, as llama.cpp matches them
        _patterns[model] = re.compile("|".join(re.escape(t) for t in texts)) if texts else None
    return _patterns[model]


def tokenize_prompt(
    model: LoadedModel, text: str, markup: Sequence[tuple[int, int]], *, start: int = 0, add_bos: bool = True
) -> list[int]:
    """Tokens of `text[start:]`; control tokens only where the template wrote them. BOS first when `add_bos` and
    the model adds one."""
    controls = model.control_tokens()
    pattern = _control_pattern(model)
    tokens: list[int] = [model.bos_id] if add_bos and model.add_bos and model.bos_id >= 0 else []
    cursor = start
    for a, b in markup:
        if b <= start or pattern is None:
            continue
        for match in pattern.finditer(text, max(a, start), b):
            if match.start() > cursor:
                tokens += _plain(model, text, cursor, match.start(), markup)
            tokens.append(controls[match.group()])
            cursor = match.end()
    if cursor < len(text):
        tokens += _plain(model, text, cursor, len(text), markup)
    return tokens
