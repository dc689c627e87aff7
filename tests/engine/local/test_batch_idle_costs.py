"""Costs measured between requests on an engine with several sequences (`serve --parallel`, Requests at once):
the measurement finishes without a failed forward pass, and the replies after it are those before it."""

from __future__ import annotations

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, TokenEvent, WaitingEvent
from app.engine.local.engine import SpecEngine

MAX_IDLE_STEPS = 10_000  # far more than a measurement takes: the loop below cannot run for ever


def _reply_text(engine: SpecEngine, ask: str) -> str:
    """One reply read as the engine process's loop reads it: a step whenever it waits."""
    config = GenerationConfig(max_tokens=24, ignore_eos=True, session="idle-costs")
    text = []
    for event in engine.chat([{"role": "user", "content": ask}], config):
        if isinstance(event, WaitingEvent):
            engine.step()
        elif isinstance(event, TokenEvent):
            text.append(event.text)
        elif isinstance(event, FinishedEvent):
            assert event.stats.stop_reason == "max_tokens"
    return "".join(text)


def test_costs_are_measured_between_batched_replies_and_the_replies_stay_the_same(tiny_models):
    # A fixed thread count: no governor, so another program on the test machine never holds the measurement back.
    engine = SpecEngine(LoadSettings(n_ctx=512, n_threads=1, n_parallel=2))
    try:
        engine.load_target(tiny_models.target)
        engine.load_draft(tiny_models.draft)
        assert engine.parallel == 2 and not engine.costs_cached()
        before = [_reply_text(engine, ask) for ask in ("the cat and the dog", "def fibonacci(n):")]
        steps = 0
        while engine.idle_step() and steps < MAX_IDLE_STEPS:  # a failed forward pass raises here
            steps += 1
        assert engine.costs_cached()  # the measurement ended, and is kept for the next start
        assert engine.idle_step() is False
        after = [_reply_text(engine, ask) for ask in ("the cat and the dog", "def fibonacci(n):")]
        assert after == before
    finally:
        engine.close()
