"""One reply to decode, as one record: what the single decoder (single.py) and the batch (app.engine.local.batch)
are both given, so a request's arguments are written once."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from app.engine.config import GenerationConfig
from app.engine.errors import PromptTooLongError
from app.engine.local.grammar import GrammarMask
from app.engine.local.vision.projector import MediaPrompt, text_only
from app.engine.reasoning.splitter import ReplySplitter
from app.engine.speculation.drafters import NgramDrafter
from app.engine.speculation.history import HistoryDrafter
from app.engine.speculation.policy import SpeculationPolicy


@dataclass(frozen=True)
class DecodeRequest:
    """A reply to decode: its prompt's tokens, settings and speculation policy, and its own helpers.

    `ngram` drafts from this reply's text and `past` from earlier requests' (the history drafter); `use_model`: whether
    the draft model the decoder holds may draft for it. Under a `grammar` (a fresh state, advanced by every kept
    token) only what it allows is written. Every event goes through `splitter`, which tells each token's part
    (reasoning or answer; all answer without one). `on_written` receives prompt + kept tokens when the reply ends. A
    prompt with pictures comes with its `media`: `prompt` holds their placeholders, and each picture is read whole,
    by the projector, when the prompt's reading reaches it; the draft model reads the text around them.
    """

    prompt: Sequence[int]
    config: GenerationConfig
    policy: SpeculationPolicy
    request_id: int = 0
    ngram: Optional[NgramDrafter] = None
    past: Optional[HistoryDrafter] = None
    use_model: bool = False
    grammar: Optional[GrammarMask] = None
    splitter: Optional[ReplySplitter] = None
    on_written: Optional[Callable[[list[int]], None]] = None
    media: Optional[MediaPrompt] = None

    def check_room(self, n_ctx: int) -> None:
        """Raise PromptTooLongError when the prompt cannot fit `n_ctx` positions with room for one new token (and
        ValueError for an empty prompt, which no caller may send)."""
        if not self.prompt:
            raise ValueError("empty prompt")
        if len(self.prompt) >= n_ctx:
            raise PromptTooLongError(len(self.prompt), n_ctx)

    def seen_by_draft(self, tokens: Sequence[int]) -> Sequence[int]:
        """What the draft model, which cannot see, reads of `tokens`."""
        return tokens if self.media is None else text_only(tokens)
