"""Each drafter keeps its one name from the engine to what a person sees: a token the history drafter wrote is
stored, coloured and charted as history, never as the draft model's."""

from __future__ import annotations

from typing import get_args

from app.engine.events import COPYING_SOURCES, DRAFT_SOURCES, DraftSource, Drafter
from app.replies.inspector_data import DRAFTER_NAMES, DRAFTERS
from app.replies.drafter_words import DRAFTER_WORDS
from app.store.provenance import ORIGINS, token_origin


def test_the_table_of_drafters_is_the_type_s_names():
    assert set(DRAFT_SOURCES) == set(get_args(DraftSource))
    assert set(get_args(Drafter)) == {*DRAFT_SOURCES, "none"}
    assert set(COPYING_SOURCES) < set(DRAFT_SOURCES) and "model" not in COPYING_SOURCES


def test_every_drafter_s_tokens_keep_their_origin_and_are_named_wherever_shown():
    for source in DRAFT_SOURCES:
        origin = token_origin("draft", source)
        assert origin in ORIGINS
        assert origin == ("draft" if source == "model" else source)
        assert source in DRAFTERS and source in DRAFTER_NAMES and source in DRAFTER_WORDS
    assert token_origin("target", "history") == "target"
