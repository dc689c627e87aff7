"""A conversation that outgrows the context stays fast: turns are dropped in steps, the prompt keeps its start
between steps, and across a step the KV cache is shifted rather than the whole chat read again."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.local.engine import SpecEngine
from app.engine.events import FinishedEvent


@pytest.fixture
def engine(tiny_models):
    engine = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1))
    engine.load_target(tiny_models.target)
    yield engine
    engine.close()


def _turn(engine, messages, session="chat-1"):
    kept, dropped = engine.fit_messages(messages, reserve_tokens=32, session=session)
    config = GenerationConfig(max_tokens=16, speculative=False, session=session)
    finished = [e for e in engine.chat(kept, config) if isinstance(e, FinishedEvent)][-1]
    messages.append({"role": "assistant", "content": finished.text})
    return dropped, finished.stats


@pytest.mark.slow
def test_a_chat_past_the_context_keeps_its_cache_and_cuts_in_steps(engine):
    messages = [{"role": "system", "content": "You are brief."}]
    history = []
    for i in range(70):
        messages.append({"role": "user", "content": f"Item {i}, please."})
        history.append(_turn(engine, messages))
    drops = [dropped for dropped, _ in history]
    cut_turns = [i for i in range(1, len(drops)) if drops[i] > drops[i - 1]]
    assert cut_turns, "the chat never outgrew the context; make it longer"
    # A cut drops several turns at once, and the next turns keep the same start: cuts are rare.
    assert len(cut_turns) <= len(drops) // 3
    for i in range(cut_turns[0], len(history)):
        stats = history[i][1]
        # Every turn after the first cut, the cut ones included, found most of its prompt in the cache.
        assert stats.prompt_cached >= stats.prompt_tokens // 2, (i, stats.prompt_cached, stats.prompt_tokens)


def test_fitting_a_thousand_message_chat_renders_the_prompt_a_few_times(engine, monkeypatch):
    messages = [{"role": "system", "content": "sys"}]
    for i in range(500):
        messages += [
            {"role": "user", "content": f"question {i} about something"},
            {"role": "assistant", "content": f"answer {i}: it depends"},
        ]
    renders = []
    count = engine.count_tokens
    monkeypatch.setattr(engine, "count_tokens", lambda kept: renders.append(len(kept)) or count(kept))
    kept, dropped = engine.fit_messages(messages, reserve_tokens=32)
    assert dropped > 900 and kept[-1] == messages[-1]
    assert count(kept) + 32 <= engine.n_ctx
    assert len(renders) <= 4
