"""CPU threads that follow the load: fewer while passes run far slower than they should, all again when quiet."""

from __future__ import annotations

from typing import Optional

import pytest

from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent, RoundEvent, ThreadsEvent
from app.engine.local.decoding.single import generate
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.llama_model import LoadedModel
from app.engine.local.thread_governor import BUSY, QUIET, ThreadGovernor
from app.engine.speculation.policy import FixedPolicy


class FakeLoad:
    """What /proc would say: other programs' busy CPUs, set by the test."""

    available = True

    def __init__(self) -> None:
        self.busy = 0.0
        self.busy_over_s = 0.5  # how long the time others_busy reports on lasted
        self.running: Optional[int] = None  # programs runnable now; None: as many as busy CPUs
        self.busy_now: Optional[float] = None  # what a short look now finds; None: as busy as before
        self.looks_now = 0

    def others_busy(self, within_s: Optional[float] = None) -> Optional[float]:
        return None if within_s is not None and self.busy_over_s > within_s else self.busy

    def others_running(self) -> Optional[int]:
        return round(self.busy) if self.running is None else self.running

    def others_busy_now(self) -> Optional[float]:
        self.looks_now += 1
        return self.busy if self.busy_now is None else self.busy_now


class SlowMachine:
    """A fake clock whose forward passes cost what a 2-core CPU's do: about 1.4x longer on one thread than on two,
    and 70x longer on two while another program holds a core (llama.cpp's threads spin for the one that lost it)."""

    def __init__(self, model: LoadedModel):
        self.now = 0.0
        self.busy = False
        self.model = model
        real_decode = model.decode

        def timed_decode(tokens, **kwargs):
            result = real_decode(tokens, **kwargs)
            per_token = 0.028 if model.n_threads >= 2 else 0.039
            if self.busy and model.n_threads >= 2:
                per_token *= 70
            self.now += per_token * max(1, len(tokens))
            return result

        model.decode = timed_decode

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def target(tiny_models):
    model = LoadedModel(tiny_models.target, n_ctx=2048, n_threads=2)
    yield model
    model.close()


def _reply(target, machine, governor, tokens=60):
    prompt = target.tokenize("The quick brown fox jumps over the lazy dog.", add_special=True)
    target.truncate(0)
    config = GenerationConfig(max_tokens=tokens, speculative=False, ignore_eos=True)
    events = list(
        generate(target, DecodeRequest(prompt, config, FixedPolicy(0, "none")), clock=machine, governor=governor)
    )
    assert isinstance(events[-1], FinishedEvent)
    return events


@pytest.mark.slow
@pytest.mark.parametrize("with_hint", [False, True], ids=["timing alone", "with /proc's load"])
def test_threads_drop_while_passes_are_slow_and_return_when_quiet(target, with_hint):
    machine = SlowMachine(target)
    load = FakeLoad() if with_hint else None
    governor = ThreadGovernor(2, target.set_threads, load, cpus=2)

    quiet = _reply(target, machine, governor)
    assert not [e for e in quiet if isinstance(e, ThreadsEvent)]
    quiet_rounds = [e for e in quiet if isinstance(e, RoundEvent)]
    # Without /proc's word, one short trial of one thread fewer finds out that fewer are slower here.
    assert sum(r.threads == 1 for r in quiet_rounds) <= (0 if with_hint else 2)
    assert quiet_rounds[-1].threads == 2

    machine.busy = True
    if load is not None:
        load.busy = 1.0
    busy = _reply(target, machine, governor)
    changes = [e for e in busy if isinstance(e, ThreadsEvent)]
    assert [(c.before, c.after, c.reason) for c in changes] == [(2, 1, BUSY)]
    assert changes[0].describe() == "2 → 1 CPU threads: another program is busy"
    rounds = [e for e in busy if isinstance(e, RoundEvent)]
    assert sum(r.threads == 2 for r in rounds) <= 1  # at most one pass waited for a thread that lost its core
    assert rounds[-1].threads == 1

    machine.busy = False
    if load is not None:
        load.busy = 0.0
    calm = _reply(target, machine, governor, tokens=80)
    changes = [e for e in calm if isinstance(e, ThreadsEvent)]
    assert [(c.before, c.after, c.reason) for c in changes] == [(1, 2, QUIET)]
    assert [e for e in calm if isinstance(e, RoundEvent)][-1].threads == 2
    assert target.n_threads == 2


def test_a_busy_spell_that_ended_before_the_reply_leaves_it_all_threads():
    """Another program kept both cores busy between two replies and has ended (nothing runs now): the next reply,
    whose long prompt is its longest pass, starts on every thread. The same spell still running costs a thread."""
    applied = []
    load = FakeLoad()
    governor = ThreadGovernor(2, applied.append, load, cpus=2)
    load.busy, load.busy_over_s, load.running = 2.0, 16.0, 0
    governor.before_reply()
    assert governor.threads == 2 and applied == []
    load.running = 1
    governor.before_reply()
    assert governor.threads == 1


@pytest.mark.parametrize(
    "busy, running", [(1.0, 0), (0.0, 1)], ids=["client-busy-in-the-last-second", "server-thread-runnable-now"]
)
def test_work_over_by_the_reply_leaves_it_all_threads(busy, running):
    """The quick looks before a reply say another program wants a core, but it was work that is over by now: the
    client that encoded this request and waits for it, or serve's server thread handing it over. A short look now
    finds the machine quiet, and the reply keeps both threads; a program still busy in that look costs a thread.
    No short look is taken when the quick ones find the machine quiet."""
    applied = []
    load = FakeLoad()
    governor = ThreadGovernor(2, applied.append, load, cpus=2)
    load.busy, load.running, load.busy_now = busy, running, 0.0
    governor.before_reply()
    assert governor.threads == 2 and applied == [] and load.looks_now == 1
    load.busy_now = 1.0
    governor.before_reply()
    assert governor.threads == 1 and load.looks_now == 2
    governor.settle()
    load.busy, load.running, load.busy_now = 0.0, 0, None
    governor.before_reply()
    assert load.looks_now == 2


def test_a_load_that_does_not_slow_passes_leaves_the_count():
    """A busy program at a low priority (nice 19) takes little from us: a trial of fewer threads is slower, so
    the count stays, and it is not tried again at once."""
    applied = []
    load = FakeLoad()
    governor = ThreadGovernor(2, applied.append, load, cpus=2)
    for _ in range(5):
        governor.observe(1, 0.028)
    load.busy = 1.0
    seconds = {2: 0.028, 1: 0.039}
    changes = []
    for _ in range(200):
        changes.append(governor.observe(1, seconds[governor.threads]))
    assert [c for c in changes if c is not None] == []
    assert governor.threads == 2
    assert applied.count(1) <= 3  # a few trials, their gaps doubling


def test_a_fixed_count_is_never_changed(tiny_models):
    from app.engine.config import LoadSettings
    from app.engine.local.engine import SpecEngine

    engine = SpecEngine(LoadSettings(n_ctx=512, n_threads=1))
    try:
        engine.load_target(tiny_models.target)
        assert engine.governor is None
    finally:
        engine.close()
