"""The local engine with a thinking reply: each token told reasoning or answer, the thinking budget closing the
thinking with its own end marker, and speculation that changes nothing of what is written."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, TokenEvent
from app.engine.local.engine import SpecEngine

# A prompt that opens the thinking, as DeepSeek-R1 distills' templates end theirs: the reply starts inside it.
OPENED = "Question: what is the answer?\n<think>\n"


@pytest.fixture
def engine(tiny_models):
    engine = SpecEngine(LoadSettings(n_ctx=1024, n_threads=1))
    engine.load_target(tiny_models.target)
    yield engine
    engine.close()


def complete(engine, prompt=OPENED, **config):
    events = list(engine.complete(prompt, GenerationConfig(ignore_eos=True, history=False, **config)))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    assert "".join(e.text for e in tokens if e.part == "answer") == finished.text
    assert "".join(e.text for e in tokens if e.part == "reasoning") == finished.reasoning
    return finished, tokens


def test_a_reply_that_starts_inside_its_thinking_and_never_leaves_it_is_marked(engine):
    whole, _ = complete(engine, max_tokens=40, speculative=False, reasoning_format="none")
    split, tokens = complete(engine, max_tokens=40, speculative=False)
    assert split.text == "" and split.reasoning == whole.text.strip()
    assert split.stats.ended_in_reasoning and split.stats.reasoning_tokens == 40
    assert {e.part for e in tokens} == {"reasoning"}


@pytest.mark.parametrize("speculative", [False, True])
def test_a_thinking_budget_closes_the_thinking_and_an_answer_follows(engine, tiny_models, speculative):
    if speculative:
        engine.load_draft(tiny_models.draft)
    closing = engine.target.tokenize("\n</think>\n\n", add_special=False)
    finished, tokens = complete(engine, max_tokens=80, thinking_budget=32, speculative=speculative)
    assert finished.stats.reasoning_tokens == 32 + len(closing)
    assert finished.text and not finished.stats.ended_in_reasoning
    assert "</think>" not in finished.text + finished.reasoning
    parts = [e.part for e in tokens if e.token_id >= 0]
    assert parts == ["reasoning"] * (32 + len(closing)) + ["answer"] * (80 - 32 - len(closing))
    # The closing marker is the model's own text: the reply as written holds it where the budget put it.
    assert finished.stats.tokens == 80


def test_speculation_writes_the_same_parts_as_plain_decoding(engine, tiny_models):
    plain, _ = complete(engine, max_tokens=60, thinking_budget=20, speculative=False)
    engine.load_draft(tiny_models.draft)
    drafted, _ = complete(engine, max_tokens=60, thinking_budget=20, speculative=True)
    assert (drafted.reasoning, drafted.text) == (plain.reasoning, plain.text)
    assert drafted.stats.drafted > 0 and drafted.stats.reasoning_drafted > 0


R1_LIKE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n<think>\n{% endif %}"
)


def test_a_template_that_opens_the_thinking_starts_the_reply_inside_it(engine):
    messages = [{"role": "user", "content": "<think> in the user's text opens nothing </think>"}]
    config = GenerationConfig(
        max_tokens=30, thinking_budget=10, ignore_eos=True, history=False, chat_format="template", chat_template=R1_LIKE
    )
    events = list(engine.chat(messages, config))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent) and finished.reasoning and finished.text
    closed = list(
        engine.chat(
            messages,
            GenerationConfig(
                max_tokens=30,
                ignore_eos=True,
                history=False,
                chat_format="template",
                chat_template=R1_LIKE.replace("<think>\n", "<think>\n\n</think>\n\n"),
            ),
        )
    )[-1]
    assert isinstance(closed, FinishedEvent) and closed.reasoning == "" and closed.stats.reasoning_tokens == 0


def test_a_reply_stopped_while_thinking_is_continued_from_its_thinking(engine):
    """The window continues a reply cut off inside its thinking by sending it back as the last assistant message,
    its thinking as reasoning_content: the model reads it after its own start marker and goes on thinking."""
    chat = [
        {"role": "user", "content": "Is 221 prime?"},
        {"role": "assistant", "content": "", "reasoning_content": "221 is odd. Try 13"},
    ]
    config = GenerationConfig(max_tokens=8, speculative=False, history=False, ignore_eos=True)
    events = list(engine.chat(chat, config))
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    assert "<think>\n221 is odd. Try 13" in engine.prompts.transcript_text
    first = next(e for e in events if isinstance(e, TokenEvent) and e.text)
    assert first.part == "reasoning"  # it goes on in its thinking, not in an answer
    assert finished.stats.reasoning_tokens > 0
