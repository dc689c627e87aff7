"""The real Qwen2.5-Coder 1.5B told to think by one example in its system prompt: its reply opens with <think>,
splits into reasoning and a clean answer, and speculation (n-gram lookup, the 0.5B draft) writes the same parts as
plain decoding."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, TokenEvent
from app.engine.local.engine import SpecEngine
from tests.support.near_ties import NEAR_TIE, first_divergence, top_two_gap

pytestmark = [pytest.mark.real_models, pytest.mark.slow]

# A bare instruction is not enough: the model writes the format once it has seen it in an example.
THINK_BY_EXAMPLE = (
    "Before you answer, think: write a line <think>, your reasoning in one or two short sentences, a line </think>, "
    "then the answer. For example:\nUser: Is 15 a prime number?\nAssistant:\n<think>\n15 = 3 x 5, so it has "
    "divisors other than 1 and itself.\n</think>\nNo, 15 is not prime: 15 = 3 x 5."
)


@pytest.fixture(scope="module")
def qwen(real_models):
    # A fixed thread count, so the replies do not depend on the thread governor (though one thread and two read the
    # same logits: tests/support/near_ties.py).
    engine = SpecEngine(LoadSettings(n_ctx=2048, n_threads=2))
    engine.load_target(real_models["target"])
    engine.load_draft(real_models["draft"])
    yield engine
    engine.close()


def _messages(question):
    return [{"role": "system", "content": THINK_BY_EXAMPLE}, {"role": "user", "content": question}]


def think(engine, question, **config):
    return think_tokens(engine, question, **config)[0]


def think_tokens(engine, question, **config):
    """The reply's FinishedEvent and its token ids."""
    events = list(engine.chat(_messages(question), GenerationConfig(max_tokens=160, history=False, **config)))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert "".join(e.text for e in tokens if e.part == "reasoning") == finished.reasoning
    assert "".join(e.text for e in tokens if e.part == "answer") == finished.text
    return finished, [e.token_id for e in tokens]


def test_a_reply_told_to_think_splits_into_reasoning_and_a_clean_answer(qwen, real_models):
    plain, plain_tokens = think_tokens(qwen, "Is 91 a prime number?", speculative=False)
    assert "7" in plain.reasoning and "13" in plain.reasoning
    assert plain.text and "think>" not in plain.text and "think>" not in plain.reasoning
    assert plain.stats.reasoning_tokens > 5 and not plain.stats.ended_in_reasoning
    for drafter in ("ngram", "auto"):
        drafted, drafted_tokens = think_tokens(qwen, "Is 91 a prime number?", drafter=drafter)
        assert drafted.stats.drafted > 0
        assert drafted.reasoning and drafted.text and "think>" not in drafted.text
        diverged = first_divergence(plain_tokens, drafted_tokens)
        if diverged is None:
            assert (drafted.reasoning, drafted.text) == (plain.reasoning, plain.text), drafter
            continue
        # The same text as plain decoding up to a near-tie, which a verify batch can flip; anywhere else the drafter
        # changed the reply. Which near-ties flip depends on how far each round drafted: the controller decides that
        # by the machine's timings (and what it learned from the replies before), so a busy machine's verify batches
        # can flip a near-tie that a quiet machine's leave; near_ties.NEAR_TIE is a verify batch's measured shift.
        prompt = qwen.target.tokenize(qwen.format_chat(_messages("Is 91 a prime number?")), add_special=True)
        gap = top_two_gap(real_models["target"], prompt, plain_tokens, diverged, n_ctx=2048, n_threads=2)
        assert gap < NEAR_TIE, f"{drafter} diverged at token {diverged} where the target was sure (gap {gap:.3f})"


def test_a_thinking_budget_ends_the_real_models_thinking_and_it_answers(qwen):
    budgeted = think(qwen, "Is 221 a prime number?", thinking_budget=24, drafter="ngram")
    closing = len(qwen.target.tokenize("\n</think>\n\n", add_special=False))
    assert budgeted.stats.reasoning_tokens == 24 + closing
    assert budgeted.text.strip() and not budgeted.stats.ended_in_reasoning
