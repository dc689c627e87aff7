"""Many requests decoded in one batch (app.engine.local.batch): each reply is the reply it gets alone, whoever
joins, leaves or is stopped beside it."""

from __future__ import annotations

import dataclasses
from typing import Optional

import pytest

from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from app.engine.local.batch.scheduler import BatchScheduler
from app.engine.local.decoding.single import generate
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.llama_model import LoadedModel
from app.engine.local.decoding.model_drafter import ModelDrafter
from app.engine.speculation.auto_controller import AutoController
from app.engine.speculation.costs import prior_costs
from app.engine.speculation.drafters import NgramDrafter
from app.engine.speculation.policy import FixedPolicy, Plan

PROMPTS = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "The quick brown fox jumps over the lazy dog. The quick brown",
    "<|im_start|>user\nhello there<|im_end|>\n<|im_start|>assistant\n",
    "the cat sat on the mat and the cat sat on the",
]
LENGTHS = [40, 17, 29, 8]


@pytest.fixture(scope="module")
def single(tiny_models):
    models = {name: LoadedModel(getattr(tiny_models, name), n_ctx=512, n_threads=1) for name in ("target", "draft")}
    yield models
    for model in models.values():
        model.close()


@pytest.fixture(scope="module")
def batched(tiny_models):
    models = {
        name: LoadedModel(getattr(tiny_models, name), n_ctx=2048, n_threads=1, n_seq_max=3)
        for name in ("target", "draft")
    }
    yield models
    for model in models.values():
        model.close()


def _policy(kind: str):
    if kind == "plain":
        return FixedPolicy(0, "ngram")
    if kind == "auto":
        return AutoController(prior_costs(1 << 20, 1 << 18, on_gpu=True), with_model=True)
    return FixedPolicy(4, kind)


def _config(kind: str, max_tokens: int) -> GenerationConfig:
    return GenerationConfig(max_tokens=max_tokens, speculative=kind != "plain", ignore_eos=True)


def alone(models, prompt: str, max_tokens: int, kind: str) -> list[int]:
    target = models["target"]
    tokens = target.tokenize(prompt, add_special=True)
    request = DecodeRequest(
        tokens,
        _config(kind, max_tokens),
        _policy(kind),
        ngram=NgramDrafter() if kind != "plain" else None,
        use_model=kind in ("model", "auto"),
    )
    events = generate(target, request, draft_model=ModelDrafter(models["draft"]))
    return [e.token_id for e in events if isinstance(e, TokenEvent)]


def request(models, prompt: str, max_tokens: int, kind: str, request_id: int) -> DecodeRequest:
    tokens = models["target"].tokenize(prompt, add_special=True)
    return DecodeRequest(
        tokens,
        _config(kind, max_tokens),
        _policy(kind),
        request_id=request_id,
        ngram=NgramDrafter() if kind != "plain" else None,
        use_model=kind in ("model", "auto"),
    )


def run_batch(
    scheduler: BatchScheduler, joins: dict[int, list[DecodeRequest]], cancel_at: Optional[dict[int, int]] = None
):
    """Steps until every request ended; requests in joins[s] are added before step s; the request added n-th
    (from 0) is cancelled before step cancel_at[n]. Returns each request's events, in the order added."""
    cancel_at = cancel_at or {}
    handles: list[int] = []
    events: dict[int, list] = {}
    for step in range(10_000):
        for req in joins.get(step, []):
            handles.append(scheduler.add(req))
        for n, at in cancel_at.items():
            if at == step:
                scheduler.cancel(handles[n])
        if not scheduler.busy and step > max(joins):
            break
        for handle, new in scheduler.step().items():
            events.setdefault(handle, []).extend(new)
    else:
        raise AssertionError("the batch never finished")
    return [events[h] for h in handles]


def tokens_of(events) -> list[int]:
    return [e.token_id for e in events if isinstance(e, TokenEvent)]


@pytest.mark.parametrize("kind", ["plain", "ngram", "model", "auto"])
def test_each_reply_in_a_batch_is_its_reply_alone(single, batched, kind):
    expected = [alone(single, p, n, kind) for p, n in zip(PROMPTS, LENGTHS)]
    # Four requests on three sequences, joining at different steps: the fourth waits for a free sequence.
    joins = {
        0: [request(batched, PROMPTS[0], LENGTHS[0], kind, 1)],
        2: [request(batched, PROMPTS[1], LENGTHS[1], kind, 2), request(batched, PROMPTS[2], LENGTHS[2], kind, 3)],
        5: [request(batched, PROMPTS[3], LENGTHS[3], kind, 4)],
    }
    got = run_batch(BatchScheduler(batched["target"], batched["draft"], prompt_chunk=8), joins)
    assert [tokens_of(e) for e in got] == expected
    for events, request_id in zip(got, (1, 2, 3, 4)):
        assert all(e.request_id == request_id for e in events)
        assert isinstance(events[-1], FinishedEvent) and events[-1].stats.stop_reason == "max_tokens"
        assert events[-1].text == "".join(e.text for e in events if isinstance(e, TokenEvent))


def test_stopping_one_request_leaves_the_others_unchanged(single, batched):
    expected = [alone(single, p, n, "model") for p, n in zip(PROMPTS[:3], LENGTHS[:3])]
    joins = {0: [request(batched, p, n, "model", i) for i, (p, n) in enumerate(zip(PROMPTS[:3], LENGTHS[:3]))]}
    got = run_batch(BatchScheduler(batched["target"], batched["draft"], prompt_chunk=8), joins, cancel_at={1: 6})
    assert tokens_of(got[0]) == expected[0] and tokens_of(got[2]) == expected[2]
    stopped = tokens_of(got[1])
    assert got[1][-1].stats.stop_reason == "cancelled"
    assert len(stopped) < LENGTHS[1] and stopped == expected[1][: len(stopped)]


def test_a_prompt_is_read_between_the_running_replies_rounds(batched):
    """A long prompt joining a running reply is read a chunk a step: the running reply writes a token every step."""
    long_prompt = " ".join(["the quick brown fox"] * 40)
    scheduler = BatchScheduler(batched["target"], batched["draft"], prompt_chunk=16)
    running = scheduler.add(request(batched, PROMPTS[0], 60, "plain", 1))
    scheduler.step()
    scheduler.step()
    joining = scheduler.add(request(batched, long_prompt, 4, "plain", 2))
    written = []
    for _ in range(6):
        out = scheduler.step()
        written.append(len(tokens_of(out.get(running, []))))
        assert not tokens_of(out.get(joining, []))  # still reading its prompt
    assert written == [1] * 6


class CpuCostPolicy(FixedPolicy):
    """Plans a draft model's draft of 4 as the controller would where it pays alone, on a CPU's costs: a pass of
    n rows costs n single tokens, a draft pass a tenth of one."""

    uses_costs = True

    def __init__(self):
        super().__init__(4, "model")

    def plan(self, k_max, ngram_tokens, has_model, ngram_match=0, history_draft=None, model_behind=0):
        return Plan("model", min(4, k_max), "draft of 4: expected 1.1x plain", expected=1.1, kind="draft")

    def expected_accepted(self, plan):
        return (0.9, 1.6, 2.1, 2.4)[: plan.k]

    def step_cost(self, rows, draft_tokens=0):
        return rows + 0.1 * draft_tokens


def test_rounds_say_when_the_batch_cut_a_draft(single, batched):
    """A draft that pays alone is dropped when three requests share the step on a CPU's costs, and its rounds say
    so; the replies are still the ones written alone."""
    expected = [alone(single, p, n, "plain") for p, n in zip(PROMPTS[:3], LENGTHS[:3])]
    reqs = [
        DecodeRequest(
            request(batched, p, n, "model", i).prompt,
            _config("model", n),
            CpuCostPolicy(),
            request_id=i,
            use_model=True,
        )
        for i, (p, n) in enumerate(zip(PROMPTS[:3], LENGTHS[:3]))
    ]
    got = run_batch(BatchScheduler(batched["target"], batched["draft"], prompt_chunk=64), {0: reqs})
    assert [tokens_of(e) for e in got] == expected
    rounds = [e for e in got[0] if isinstance(e, RoundEvent)]
    shared = rounds[2 : LENGTHS[1]]  # while all three are writing (the first two read the others' prompts beside)
    assert all(r.kind == "batch" and r.drafted == 0 and "3 requests share the batch" in r.reason for r in shared)
    alone_again = [r for r in rounds if r.index > LENGTHS[2] + 2]  # after the others ended
    assert alone_again and all(r.kind == "draft" and r.drafted for r in alone_again)


def test_auto_holds_as_many_requests_as_memory_allows(tiny_models):
    from app.engine.gguf.memory import kv_bytes
    from app.engine.local.batch.sequences import kv_budget_line, parallel_sequences

    gib = 1 << 30
    assert parallel_sequences(0, gib // 4, available=16 * gib) == 4  # the most Auto takes
    assert parallel_sequences(0, gib, available=8 * gib) == 2  # a quarter of the memory: two contexts
    assert parallel_sequences(0, gib, available=gib) == 1  # never none
    assert parallel_sequences(6, gib, available=gib) == 6  # a number is used as it is
    model = LoadedModel(tiny_models.target, n_ctx=256, n_threads=1)
    try:
        per_sequence = kv_bytes(model.kv_values_per_token, 4096)
    finally:
        model.close()
    assert per_sequence > 0
    assert kv_budget_line(2, per_sequence, 4096).startswith("2 requests at once: 2 x ")


def test_the_next_turn_reuses_the_sequence_that_holds_its_start(single, batched):
    """A request whose prompt continues an ended one (a chat's next turn) takes that request's sequence, so only
    the new text is read; the reply is still the one it gets alone."""
    target = batched["target"]
    scheduler = BatchScheduler(target, batched["draft"])
    first_written: list[int] = []
    first = dataclasses.replace(request(batched, PROMPTS[0], 12, "plain", 1), on_written=first_written.extend)
    run_batch(scheduler, {0: [request(batched, PROMPTS[1], 30, "plain", 2), first]})
    follow_up = first_written + target.tokenize("\n# and now in C\n", add_special=False)
    (events,) = run_batch(scheduler, {0: [DecodeRequest(follow_up, _config("plain", 10), _policy("plain"), 3)]})
    assert events[-1].stats.prompt_cached >= len(first_written) - 1
    alone_events = list(generate(single["target"], DecodeRequest(follow_up, _config("plain", 10), _policy("plain"))))
    assert tokens_of(events) == tokens_of(alone_events)


def test_every_chat_s_controller_learns_the_machine_s_speed_in_a_batch(batched):
    """Requests of different chats (a controller each) that never decode alone still learn from the batch's passes
    how fast the machine is, so none waits for a single-token timing (RoundKind "timing") the whole reply."""
    reqs = [request(batched, p, 24, "auto", i) for i, p in enumerate(PROMPTS[:3])]
    got = run_batch(BatchScheduler(batched["target"], batched["draft"]), {0: reqs})
    for events in got:
        kinds = [e.kind for e in events if isinstance(e, RoundEvent)]
        assert kinds[-1] != "timing" and kinds.count("timing") < len(kinds) // 2, kinds


def test_requests_added_together_read_their_prompts_in_one_pass(batched):
    """Three short requests sent at once all write their first token at the first step: their prompts are read
    side by side, not one after another, and with their first rounds, not in a pass before them."""
    scheduler = BatchScheduler(batched["target"], batched["draft"])
    handles = [scheduler.add(request(batched, p, 4, "plain", i)) for i, p in enumerate(PROMPTS[:3])]
    first = scheduler.step()
    assert all(len(tokens_of(first[h])) == 1 for h in handles)


def test_requests_that_cannot_fit_the_memory_are_refused_with_the_numbers():
    from app.engine.local.batch.sequences import kv_room_problem

    gib = 1 << 30
    said = kv_room_problem(16, gib, 32768, 6 * gib)
    assert said.startswith("16 requests at once of 32,768 tokens each need 17.2 GB of KV cache, more than the 6.4 GB")
    assert said.endswith("ask for at most 6 at once, or a smaller context.")
    assert kv_room_problem(4, gib, 32768, 6 * gib) == ""  # they fit
    assert kv_room_problem(1, 8 * gib, 32768, 6 * gib) == ""  # one request: llama.cpp says what it can
