"""A real llama-server speculating with the real Qwen pair: the rebuilt per-token provenance agrees with the
server's own counters, and its greedy text is SpecChat's own local greedy text."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, TokenEvent
from app.engine.remote.engine import RemoteEngine
from app.engine.targets import ServerModel
from app.engine.remote.http import list_models
from tests.conftest import REAL_DRAFT, REAL_MODELS_DIR, REAL_TARGET
from tests.remote.llama_tools import N_CTX

pytestmark = [pytest.mark.real_models, pytest.mark.slow]

MESSAGES = [{"role": "user", "content": "Write a Python function that returns the sum of a list of numbers."}]
MAX_TOKENS = 48


def _collect(events):
    tokens, finished = [], None
    for event in events:
        if isinstance(event, TokenEvent):
            tokens.append(event)
        elif isinstance(event, FinishedEvent):
            finished = event
    return tokens, finished


def test_llama_server_provenance_matches_its_counters_and_its_text_matches_local_greedy(llama_server):
    from app.engine.local.engine import SpecEngine

    model = list_models(llama_server)[0].id
    remote = RemoteEngine(LoadSettings(n_ctx=N_CTX), api_key_for=lambda url: None)
    remote.load_target(ServerModel.at(llama_server, model))
    assert remote.n_ctx == N_CTX
    config = GenerationConfig(max_tokens=MAX_TOKENS, temperature=0.0, draft_max=4, drafter="model")
    tokens, finished = _collect(remote.chat(MESSAGES, config))
    drafts = sum(1 for t in tokens if t.source == "draft")
    assert finished.stats.accepted > 0, "the server drafted nothing: is --spec-type set?"
    assert drafts == finished.stats.accepted  # what the tokens say == the server's draft_n_accepted
    assert finished.stats.tokens == len([t for t in tokens]) == MAX_TOKENS

    local = SpecEngine(LoadSettings(n_ctx=N_CTX, n_threads=2))
    try:
        local.load_target(REAL_MODELS_DIR / REAL_TARGET)
        local.load_draft(REAL_MODELS_DIR / REAL_DRAFT)
        local_tokens, local_finished = _collect(local.chat(MESSAGES, config))
    finally:
        local.close()
    assert finished.text == local_finished.text
