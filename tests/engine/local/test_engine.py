"""SpecEngine as the window and the CLI use it: loading, chat turns with KV reuse, bad input with clear errors."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.local.engine import SpecEngine
from app.engine.errors import EngineError, IncompatiblePairError, ModelFileError, PromptTooLongError
from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from tests.support.engines import tiny_pair_engine


def reply(engine, messages, **config):
    events = list(engine.chat(messages, GenerationConfig(**{"max_tokens": 24, **config})))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    return events, finished


@pytest.fixture
def engine(tiny_models):
    engine = tiny_pair_engine(tiny_models)
    yield engine
    engine.close()


def test_second_turn_reuses_the_first_turns_cache(engine):
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hello there"}]
    _, first = reply(engine, messages)
    messages += [{"role": "assistant", "content": first.text}, {"role": "user", "content": "and then?"}]
    _, second = reply(engine, messages)
    # Everything of turn 1 (its prompt and the reply as generated) is already in the cache, except the reply's
    # last token, which was emitted without being evaluated.
    assert second.stats.prompt_cached >= first.stats.prompt_tokens + first.stats.tokens - 1
    assert second.stats.prompt_tokens > second.stats.prompt_cached


def test_speculation_toggles_per_request_without_reloading(engine):
    messages = [{"role": "user", "content": "def add(a, b):"}]
    draft_model = engine.draft
    events_off, off = reply(engine, messages, speculative=False)
    events_on, on = reply(engine, messages, speculative=True, draft_max=4)
    assert engine.draft is draft_model  # same loaded model, nothing reloaded
    assert off.stats.drafted == 0 and {e.source for e in events_off if isinstance(e, TokenEvent)} == {"target"}
    assert on.stats.drafted > 0 and any(e.source == "draft" for e in events_on if isinstance(e, TokenEvent))
    assert on.text == off.text  # greedy: same reply, only the speed differs


def test_auto_mode_explains_each_round_and_keeps_the_output(engine):
    messages = [{"role": "user", "content": "count: 1 2 3 4 5 6 7 8 9"}]
    _, plain = reply(engine, messages, speculative=False, max_tokens=40)
    events, auto = reply(engine, messages, draft_max=None, max_tokens=40)
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    assert rounds and all(r.reason for r in rounds)
    assert auto.text == plain.text


def test_incompatible_draft_is_refused_with_its_reason(engine, tiny_models):
    with pytest.raises(IncompatiblePairError, match="vocab"):
        engine.load_draft(tiny_models.bad_vocab_size)
    # The engine still works, with the draft it had.
    assert engine.draft_path == tiny_models.draft
    _, finished = reply(engine, [{"role": "user", "content": "hi"}])
    assert finished.stats.tokens > 0


@pytest.mark.parametrize("broken", ["truncated", "not_gguf", "missing"])
def test_broken_target_gives_a_clear_error(tiny_models, tmp_path, broken):
    path = tmp_path / "gone.gguf" if broken == "missing" else getattr(tiny_models, broken)
    engine = SpecEngine(LoadSettings(n_ctx=512, n_threads=1))
    with pytest.raises(EngineError) as info:
        engine.load_target(path)
    assert path.name in str(info.value)
    if broken == "missing":
        assert isinstance(info.value, ModelFileError) and "not found" in str(info.value)
    assert engine.target is None


def test_long_conversations_drop_oldest_turns_not_half_messages(tiny_models):
    engine = SpecEngine(LoadSettings(n_ctx=256, n_threads=1))
    engine.load_target(tiny_models.target)
    try:
        messages = [{"role": "system", "content": "sys"}]
        for i in range(12):
            messages += [
                {"role": "user", "content": f"question {i} " * 4},
                {"role": "assistant", "content": f"answer {i} " * 4},
            ]
        messages.append({"role": "user", "content": "last question"})
        kept, dropped = engine.fit_messages(messages, reserve_tokens=64)
        assert dropped > 0 and dropped % 2 == 0
        assert kept[0] == messages[0] and kept[-1] == messages[-1]
        assert kept[1:] == messages[1 + dropped :]  # whole turns, oldest first, untouched
        assert engine.count_tokens(kept) + 64 <= engine.n_ctx
        with pytest.raises(PromptTooLongError):
            engine.fit_messages([{"role": "user", "content": "word " * 2000}], reserve_tokens=64)
    finally:
        engine.close()


def test_auto_controller_learns_per_chat(engine):
    messages = [{"role": "user", "content": "count: 1 2 3"}]
    reply(engine, messages, draft_max=None, session="chat-1")
    reply(engine, messages, draft_max=None, session="chat-2")
    reply(engine, messages, draft_max=None, session="chat-1")
    assert engine.policies.sessions() == {"chat-1", "chat-2"}  # one controller (and its acceptance history) per chat


def test_replies_start_on_an_estimate_and_switch_to_costs_measured_in_idle_time(engine):
    """Nothing waits for a measurement: the first reply runs on the estimate, idle steps measure, and the chat's
    controller then decides by what was measured."""
    messages = [{"role": "user", "content": "count: 1 2 3"}]
    assert not engine.costs_cached()
    _, finished = reply(engine, messages, draft_max=None, session="chat-1")
    assert finished.stats.tokens > 0
    (state,) = engine.policies.states()
    assert state.costs_estimated
    steps = 0
    while engine.idle_step():
        steps += 1
    assert steps > 10 and engine.costs_cached()
    (state,) = engine.policies.states()
    assert not state.costs_estimated and state.verify_s[0] > 0
    assert engine.idle_step() is False  # nothing left to do


def test_a_small_context_takes_a_prompt_longer_than_it_asked_for(tiny_models):
    # Asked for 64 tokens, llama.cpp gives 256 but keeps its batch at 64: one 100-token decode would abort the
    # whole process. The prompt is evaluated in chunks the context allows and the reply comes.
    small = SpecEngine(LoadSettings(n_ctx=64, n_threads=1))
    try:
        small.load_target(tiny_models.target)
        assert small.n_ctx > 64
        _, finished = reply(small, [{"role": "user", "content": "tell me about the lazy dog " * 12}], max_tokens=8)
        assert finished.stats.prompt_tokens > 64 and finished.stats.tokens > 0
    finally:
        small.close()


def test_threads_set_after_the_engine_module_was_imported_are_used(monkeypatch):
    monkeypatch.setenv("SPECCHAT_THREADS", "3")
    assert SpecEngine().load_settings.threads == 3
    monkeypatch.setenv("SPECCHAT_THREADS", "2")
    assert SpecEngine().load_settings.threads == 2


def test_stop_mid_reply_ends_it_within_one_round_and_keeps_what_was_written(engine):
    """The real engine's Stop, without timing: the cancel is set when the first token is out."""
    import threading

    cancel = threading.Event()
    events = []
    for event in engine.chat(
        [{"role": "user", "content": "talk for a long time"}],
        GenerationConfig(max_tokens=500, draft_max=4),
        cancel=cancel,
    ):
        events.append(event)
        if isinstance(event, TokenEvent):
            cancel.set()
    finished = events[-1]
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert isinstance(finished, FinishedEvent) and finished.stats.stop_reason == "cancelled"
    # The round under way when Stop came finishes (at most draft_max + 1 tokens); no further round starts.
    assert 1 <= len(tokens) <= 5 and finished.stats.tokens == len(tokens)
    assert finished.text == "".join(t.text for t in tokens)
    # The engine is free for the next request at once.
    _, after = reply(engine, [{"role": "user", "content": "short now"}], max_tokens=4)
    assert after.stats.stop_reason in ("max_tokens", "eos") and after.stats.tokens >= 1


def test_a_cost_table_timed_while_the_machine_was_busy_is_forgotten_after_one_plain_token(engine):
    """Such a table (every pass far slower than now, the draft model's share far too small) promised the draft
    model 4x plain where it gave 0.6x, and the controller never timed a plain token to see it."""
    from app.engine.local import cost_cache as costs

    engine.measure_costs()
    cache = costs._read_cache()
    # Every pass timed 50x too slow, waiting for a CPU; so slow that batches look nearly free beside one token.
    costs._write_cache(
        {key: [0.0] + [50 * batch[1] * (1 + 0.05 * n) for n in range(len(batch) - 1)] for key, batch in cache.items()}
    )
    assert engine.costs_cached()
    events, finished = reply(engine, [{"role": "user", "content": "count: 1 2 3"}], draft_max=None)
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    assert rounds[0].drafter == "none" and rounds[0].reason == "timing one token at 1 CPU thread before drafting"
    assert not engine.costs_cached()  # idle time measures it again
    (state,) = engine.policies.states()
    assert state.costs_estimated and finished.stats.tokens > 0
