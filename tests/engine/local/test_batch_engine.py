"""The engine with several sequences (LoadSettings.n_parallel): replies asked for together are written side by side,
each the reply it gets alone, and a stopped one leaves the others going."""

from __future__ import annotations

import threading

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.errors import PromptTooLongError
from app.engine.events import FinishedEvent, ThreadsEvent, TokenEvent, WaitingEvent
from app.engine.local.engine import SpecEngine
from app.engine.local.thread_governor import ThreadChange

QUESTIONS = ["def fibonacci(n):", "the cat sat on the mat and the cat", "hello there, how are", "1, 2, 3, 4, 5,"]


def _config(drafter: str, tokens: int) -> GenerationConfig:
    return GenerationConfig(
        max_tokens=tokens, ignore_eos=True, drafter=drafter, speculative=drafter != "none", session=f"s-{tokens}"
    )


@pytest.fixture(scope="module")
def engines(tiny_models):
    made = {}
    for name, parallel in (("alone", 1), ("batched", 3)):
        engine = SpecEngine(LoadSettings(n_ctx=512, n_threads=1, n_parallel=parallel))
        engine.load_target(tiny_models.target)
        engine.load_draft(tiny_models.draft)
        made[name] = engine
    yield made
    for engine in made.values():
        engine.close()


def _drive(
    engine: SpecEngine,
    replies: dict[int, object],
    cancels: dict[int, threading.Event] | None = None,
    stop_after: dict[int, int] | None = None,
    seen: dict[int, list] | None = None,
) -> dict[int, FinishedEvent]:
    """Read every reply until it waits, step, again: as the engine process's loop does."""
    finished: dict[int, FinishedEvent] = {}
    tokens = {key: 0 for key in replies}
    live = {key: iter(events) for key, events in replies.items()}
    steps = 0
    while live:
        for key, events in list(live.items()):
            for event in events:
                if isinstance(event, WaitingEvent):
                    break
                if seen is not None:
                    seen.setdefault(key, []).append(event)
                if isinstance(event, TokenEvent):
                    tokens[key] += 1
                    if stop_after and cancels and tokens[key] == stop_after.get(key):
                        cancels[key].set()
                if isinstance(event, FinishedEvent):
                    finished[key] = event
            else:
                del live[key]
        engine.step()
        steps += 1
        assert steps < 5000, "the replies never ended"
    return finished


def _alone(engine: SpecEngine, question: str, config: GenerationConfig) -> str:
    finished = [e for e in engine.chat([{"role": "user", "content": question}], config) if isinstance(e, FinishedEvent)]
    return finished[-1].text


@pytest.mark.parametrize("drafter", ["none", "ngram", "model", "auto"])
def test_replies_written_side_by_side_are_each_the_reply_alone(engines, drafter):
    batched = engines["batched"]
    assert batched.parallel == 3
    configs = {i: _config(drafter, 12 + 7 * i) for i in range(4)}  # four: one waits for a free sequence
    replies = {
        i: batched.chat([{"role": "user", "content": QUESTIONS[i]}], configs[i], request_id=i + 1) for i in range(4)
    }
    finished = _drive(batched, replies)
    for i in range(4):
        assert finished[i].stats.tokens == configs[i].max_tokens
        assert finished[i].text == _alone(engines["alone"], QUESTIONS[i], configs[i]), f"request {i} differs"


def test_stopping_one_reply_leaves_the_others_going(engines):
    batched = engines["batched"]
    cancels = {i: threading.Event() for i in range(2)}
    configs = {i: _config("auto", 30) for i in range(2)}
    replies = {
        i: batched.chat([{"role": "user", "content": QUESTIONS[i]}], configs[i], cancel=cancels[i], request_id=10 + i)
        for i in range(2)
    }
    finished = _drive(batched, replies, cancels, stop_after={0: 3})
    assert finished[0].stats.stop_reason == "cancelled" and finished[0].stats.tokens < 30
    assert finished[1].stats.tokens == 30
    assert finished[1].text == _alone(engines["alone"], QUESTIONS[1], configs[1])


class _BusyMachine:
    """A governor that finds another program busy on the batch's fourth pass and drops a thread."""

    def __init__(self):
        self.starts = self.passes = self.settled = 0

    def before_reply(self):
        self.starts += 1
        return None

    def observe(self, tokens: int, seconds: float):
        self.passes += 1
        return ThreadChange(2, 1, "another program is busy") if self.passes == 4 else None

    def settle(self):
        self.settled += 1
        return None


def test_a_busy_machine_takes_a_thread_from_the_whole_batch_and_every_reply_says_so(engines):
    """On a busy desktop llama.cpp's threads wait for a lost core at every pass (issue 21): the batch follows the
    load as one reply does, and each reply's record says when its threads changed."""
    batched = engines["batched"]
    governor = _BusyMachine()
    batched._batch.scheduler.governor = governor
    try:
        replies = {i: batched.chat([{"role": "user", "content": QUESTIONS[i]}], _config("none", 12)) for i in (0, 1)}
        seen: dict[int, list] = {}
        _drive(batched, replies, seen=seen)
    finally:
        batched._batch.scheduler.governor = None
    assert governor.starts == 1 and governor.settled == 1
    for events in seen.values():
        changes = [e for e in events if isinstance(e, ThreadsEvent)]
        assert [(c.before, c.after) for c in changes] == [(2, 1)]


def test_a_reply_whose_reader_left_frees_its_sequence(engines):
    batched = engines["batched"]
    for round_ in range(5):  # more than the sequences: each left reply must give its sequence back
        events = iter(
            batched.chat([{"role": "user", "content": QUESTIONS[0]}], _config("none", 50), request_id=100 + round_)
        )
        for event in events:
            if isinstance(event, TokenEvent):
                break
            if isinstance(event, WaitingEvent):
                batched.step()
        events.close()  # type: ignore[attr-defined]
        batched.step()
    assert batched.step() is False  # nothing left running
    text = _drive(batched, {0: batched.chat([{"role": "user", "content": QUESTIONS[2]}], _config("none", 9))})[0]
    assert text.stats.tokens == 9


def test_a_prompt_too_long_for_one_sequence_is_refused(engines):
    batched = engines["batched"]
    assert batched.n_ctx == 512  # each request's context, not the three sequences' together
    with pytest.raises(PromptTooLongError):
        batched.fit_messages([{"role": "user", "content": "word " * 900}], reserve_tokens=16)


def test_one_clients_prompt_is_never_another_clients_cache(engines):
    import dataclasses

    batched = engines["batched"]
    ask = [{"role": "user", "content": "a long shared system prompt " * 8 + "and a question"}]
    config = _config("none", 4)
    first = _drive(batched, {0: batched.chat(ask, dataclasses.replace(config, client="a"))})[0]
    again = _drive(batched, {0: batched.chat(ask, dataclasses.replace(config, client="a"))})[0]
    other = _drive(batched, {0: batched.chat(ask, dataclasses.replace(config, client="b"))})[0]
    assert first.stats.prompt_cached == 0
    assert again.stats.prompt_cached > 50  # the same client: its sequence's prefix is read from cache
    assert other.stats.prompt_cached == 0  # another client's: read again, as if nobody had asked it
    assert other.text == first.text


@pytest.mark.slow
def test_kept_conversations_restore_into_the_batchs_free_sequence(tiny_models):
    """Three chats through two sequences: the chat whose sequence another took is restored from memory into a free
    one, and after a restart from disk, with the reply it gets from an engine that never saw it."""
    from tests.support.engines import tiny_pair_engine
    from tests.engine.local.test_conversation_cache import _chat, _continued, _fresh_reply

    def one(engine, messages, session):
        return _drive(engine, {0: engine.chat(messages, GenerationConfig(max_tokens=12, session=session))})[0]

    chats = {name: _chat(name, 6)[:-1] for name in ("apple", "brick", "cedar")}
    engine = tiny_pair_engine(tiny_models, 2048, n_parallel=2)
    try:
        assert engine.parallel == 2
        first = {name: one(engine, messages, f"chat-{name}") for name, messages in chats.items()}
        again = _continued(chats["apple"], first["apple"].text, "And one more thing about apples.")
        back = one(engine, again, "chat-apple")
    finally:
        engine.close()
    assert back.stats.prompt_cached >= 0.9 * back.stats.prompt_tokens, back.stats
    assert back.text == _fresh_reply(tiny_models, again, "chat-apple")
    restarted = tiny_pair_engine(tiny_models, 2048, n_parallel=2)
    try:
        later = _continued(chats["brick"], first["brick"].text, "And bricks?")
        from_disk = one(restarted, later, "chat-brick")
    finally:
        restarted.close()
    assert from_disk.stats.prompt_cached >= 0.9 * from_disk.stats.prompt_tokens, from_disk.stats
    assert from_disk.text == _fresh_reply(tiny_models, later, "chat-brick")
