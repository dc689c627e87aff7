"""Which drafters a reply may use: the draft model (unless its file changed since it loaded), the n-gram drafter (the
engine's own when the reply is decoded alone, the reply's own side by side, as each has its own text) and a history
book (earlier requests' text)."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass
from typing import Optional

from app.engine.config import GenerationConfig
from app.engine.local.llama_model import LoadedModel
from app.engine.local.model_pair import ModelPair
from app.engine.speculation.drafters import NgramDrafter
from app.engine.speculation.history import HistoryDrafter
from app.engine.speculation.history_file import HistoryBooks, HistorySync


@dataclass(frozen=True)
class ReplyDrafters:
    """A reply's drafters. `config`: the request's own, drafting with copies when the draft model's file changed;
    `book`: the history book the reply is recorded into when it ends; `notice`: the book's news, said once ("" or a
    sentence: a damaged file set aside, or history off)."""

    config: GenerationConfig
    draft: Optional[LoadedModel] = None
    ngram: Optional[NgramDrafter] = None
    book: Optional[HistorySync] = None
    notice: str = ""

    @property
    def past(self) -> Optional[HistoryDrafter]:
        """The history drafter, when the reply drafts at all."""
        return self.book.drafter if self.book is not None and self.config.speculative else None


def reply_drafters(
    config: GenerationConfig, models: ModelPair, ngram: NgramDrafter, histories: HistoryBooks, side_by_side: bool
) -> ReplyDrafters:
    """The drafters a reply with `config` may use; `ngram`: the engine's own n-gram drafter."""
    if models.draft_file_change():  # still loaded while others' replies run: this one drafts without it
        config = dataclasses.replace(config, drafter="ngram")
    target = models.require_target()
    draft = models.draft if config.drafter in ("auto", "model") else None
    ngram.min_match = config.ngram_min_match if config.draft_max is not None else 0
    own: Optional[NgramDrafter] = None
    if config.drafter in ("auto", "ngram", "history") or draft is None:
        own = ngram
        if side_by_side:
            own = NgramDrafter(is_control=target.is_control, escape=target.json_escaped)
            own.min_match = ngram.min_match
    book, notice = None, ""
    if config.history:
        tokenize = functools.partial(target.tokenize, add_special=False, parse_special=True)
        book, notice = histories.for_reply(config.kept_scope, config.speculative, tokenize)
    return ReplyDrafters(config, draft, own, book, notice)
