"""Tokenizing a chat prompt so that only the chat template's own markup becomes control tokens.

llama.cpp's tokenizer turns every literal "<|im_start|>" in a text into the control token when asked to parse
special tokens, so a message that contains one could forge a system turn. Here the text is cut only at the control
tokens that lie in the spans the template wrote (app.engine.local.chat_format.RenderedPrompt.markup); every stretch in
between, template text and message content alike, is tokenized as plain text. That is what llama.cpp does itself
with special parsing on, so an ordinary chat gets exactly the tokens it always did.
"""

from __future__ import annotations

import re
import weakref
from typing import Optional, Sequence

from app.engine.local.llama_model import LoadedModel

_patterns: weakref.WeakKeyDictionary[LoadedModel, Optional[re.Pattern]] = weakref.WeakKeyDictionary()


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
                tokens += model.tokenize(text[cursor:match.start()], add_special=False, parse_special=False)
            tokens.append(controls[match.group()])
            cursor = match.end()
    if cursor < len(text):
        tokens += model.tokenize(text[cursor:], add_special=False, parse_special=False)
    return tokens
