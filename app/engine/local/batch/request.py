"""One request for the batch: what the single decoder is given as arguments, as one record, and what of its text the
draft model reads."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from app.engine.config import GenerationConfig
from app.engine.local.grammar import GrammarMask
from app.engine.local.vision.projector import MediaPrompt, text_only
from app.engine.reasoning.splitter import ReplySplitter
from app.engine.speculation.drafters import NgramDrafter
from app.engine.speculation.history import HistoryDrafter
from app.engine.speculation.policy import SpeculationPolicy


@dataclass
class BatchRequest:
    """One request for the batch: its prompt's tokens, settings and policy (the single decoder's arguments).
    `ngram` and `past` are this request's own copy drafters; `use_model`: whether the draft model may draft for it.
    `on_written` receives prompt + kept tokens when it ends."""

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
    # Called with the sequence the request is given, before its prompt is matched against what it holds (a kept
    # conversation state is restored into it there), and with the same sequence when it ends, before another
    # request may take it (its state is saved there).
    on_admit: Optional[Callable[[int], None]] = None
    on_end: Optional[Callable[[int], None]] = None
    # A prompt with pictures: `prompt` holds their placeholders, and each picture is read into the request's sequence
    # whole, by the projector, when the prompt's reading reaches it. The draft model reads the text around them.
    media: Optional[MediaPrompt] = None

    def seen_by_draft(self, tokens: Sequence[int]) -> Sequence[int]:
        """What the draft model, which cannot see, reads of `tokens`."""
        return tokens if self.media is None else text_only(tokens)
