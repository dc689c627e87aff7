"""Thinking models' chat templates, on tiny GGUFs that carry the real ones (tests/fixtures/chat_templates, sources in
SOURCES.md there): the prompt of a 3-turn chat whose earlier replies carry their reasoning is what the template
itself renders under the history rules (app.engine.local.chat_format), the request's thinking settings reach
the template, and the KV cache still carries each turn into the next."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.errors import PromptFormatError
from app.engine.events import FinishedEvent
from app.engine.local.chat_format import render_prompt
from app.engine.local.engine import SpecEngine
from app.testing.synthetic import write_tiny_model

TEMPLATES = Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates"

ANSWERS = ["No: 221 = 13 x 17.", "Yes, 223 is prime."]
REASONINGS = [
    "Try the primes up to 14. 13 x 17 = 221, so it has factors.",
    "sqrt(223) < 15; 2, 3, 5, 7, 11, 13 leave remainders. Prime.",
]
QUESTIONS = ["Is 221 a prime number?", "And 223?", "Which of the two is odd?"]

# (template file, the key an earlier reply's reasoning reaches the template under, or None: it gets none)
FAMILIES = [
    ("qwen3.jinja", "reasoning_content"),  # kept only for replies after the last user message
    ("deepseek-r1-distill-qwen.jinja", None),  # never read: old replies are answers only
    ("gpt-oss.jinja", "thinking"),  # read, and dropped from every turn but a tool call's
    ("magistral.jinja", None),  # reads thinking only as content chunks; SpecChat sends text
]


def _reference(template: str, messages: list[dict], bos: str, eos: str, **variables) -> str:
    """The template rendered as Hugging Face's apply_chat_template renders it, straight through jinja2."""
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    env.globals["raise_exception"] = lambda message: (_ for _ in ()).throw(ValueError(message))
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template).render(
        messages=messages, add_generation_prompt=True, bos_token=bos, eos_token=eos, **variables
    )


def _chat(turns: int, reasoning_key: str = "reasoning_content") -> list[dict]:
    """A system prompt, then `turns` questions, each but the last with its answer (and its reasoning as the window
    sends it: beside the answer, under `reasoning_key`)."""
    messages = [{"role": "system", "content": "Answer briefly."}]
    for i in range(turns):
        messages.append({"role": "user", "content": QUESTIONS[i]})
        if i + 1 < turns:
            reply = {"role": "assistant", "content": ANSWERS[i]}
            if reasoning_key:
                reply[reasoning_key] = REASONINGS[i]
            messages.append(reply)
    return messages


@pytest.fixture()
def thinking_engine(tmp_path):
    engines = []

    def load(template_name: str) -> SpecEngine:
        model = write_tiny_model(
            tmp_path / f"{template_name}.gguf",
            extra_metadata=[("tokenizer.chat_template", (TEMPLATES / template_name).read_text())],
        )
        engine = SpecEngine(LoadSettings(n_ctx=2048, n_threads=1))
        engine.load_target(model)
        engines.append(engine)
        return engine

    yield load
    for engine in engines:
        engine.close()


def _turn(engine: SpecEngine, messages: list[dict], **config) -> tuple[str, FinishedEvent]:
    """One reply; returns the prompt the model read (the engine's transcript less the reply) and its end."""
    finished = list(engine.chat(messages, GenerationConfig(max_tokens=6, seed=1, **config)))[-1]
    assert isinstance(finished, FinishedEvent)
    # The transcript holds the reply as the model wrote it (its thinking and markers too): the prompt is its
    # first prompt_tokens tokens.
    tokens = engine.prompts.transcript_tokens[: finished.stats.prompt_tokens]
    target = engine.prompts.target
    prompt = b"".join(
        target.token_text(t).encode() if target.is_control(t) else target.token_bytes(t) for t in tokens
    ).decode("utf-8", errors="replace")
    assert engine.prompts.transcript_text.startswith(prompt)
    assert engine.prompts.transcript_text.endswith(finished.text)
    return prompt, finished


@pytest.mark.parametrize("name,reasoning_key", FAMILIES, ids=[f[0] for f in FAMILIES])
def test_a_three_turn_chat_is_the_templates_own_prompt_and_reuses_the_cache(thinking_engine, name, reasoning_key):
    template = (TEMPLATES / name).read_text()
    engine = thinking_engine(name)
    target = engine.prompts.target
    bos, eos = target.token_text(target.bos_id), target.token_text(target.eos_id)
    prompts, stats = [], []
    for turns in (1, 2, 3):
        prompt, finished = _turn(engine, _chat(turns))
        # What the template renders itself, given each old reply's reasoning under the one key it reads, or none.
        expected = _reference(template, _chat(turns, reasoning_key), bos, eos)
        assert prompt == expected
        assert engine.template_notice == ""
        for reasoning, answer in zip(REASONINGS, ANSWERS):
            assert prompt.count(answer) <= 1
            if reasoning_key is None:  # never glued into the answer
                assert reasoning not in prompt
        prompts.append(prompt)
        stats.append(finished.stats)
    opened = name == "deepseek-r1-distill-qwen.jinja"
    if opened:
        assert prompts[2].endswith("<｜Assistant｜><think>\n")  # the reply starts inside its thinking
    assert engine.prompts.render(_chat(3)).opens_thinking == opened
    for earlier, later, cached in (
        (prompts[0], prompts[1], stats[1].prompt_cached),
        (prompts[1], prompts[2], stats[2].prompt_cached),
    ):
        shared = os.path.commonprefix([earlier, later])
        if opened:
            # The earlier prompt ended with the opened "<think>\n"; the next renders that reply as its answer alone.
            assert earlier == shared + "<think>\n"
        else:
            # The next prompt repeats the earlier one whole. The reply itself is read again: a thinking model's KV
            # holds its reasoning first, and the template drops old reasoning (Qwen3 before the last user
            # message, gpt-oss always), so the cache can reach no further than the reply's start.
            assert shared == earlier
        assert cached >= len(target.tokenize(shared, add_special=False, parse_special=True))


def test_a_reply_after_the_last_question_keeps_its_reasoning_with_qwen3():
    """Qwen3 keeps the reasoning of the replies after the last user message (a tool-calling turn in progress)."""
    template = (TEMPLATES / "qwen3.jinja").read_text()
    call = {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}
    messages = [
        {"role": "user", "content": "Weather in Rome?"},
        {"role": "assistant", "content": "", "reasoning_content": "I should call get_weather.", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": '{"temp_c": 21}'},
    ]
    rendered = render_prompt(template, messages)
    assert rendered.text == _reference(template, messages, "", "")
    assert "<think>\nI should call get_weather.\n</think>" in rendered.text
    # The old reasoning is model text, not markup: none of it may become a control token.
    start = rendered.text.index("I should call")
    assert not any(a <= start < b for a, b in rendered.markup)


def test_enable_thinking_off_closes_the_thinking_in_the_prompt_with_qwen3():
    template = (TEMPLATES / "qwen3.jinja").read_text()
    messages = _chat(1)
    off = render_prompt(template, messages, variables={"enable_thinking": False})
    assert off.text.endswith("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert not off.opens_thinking
    on = render_prompt(template, messages, variables={"enable_thinking": True})
    assert on.text.endswith("<|im_start|>assistant\n") and on.text == render_prompt(template, messages).text


def test_the_requests_thinking_settings_reach_the_template(thinking_engine):
    engine = thinking_engine("gpt-oss.jinja")
    high, _ = _turn(engine, _chat(1), reasoning_effort="high")
    assert "Reasoning: high" in high
    default, _ = _turn(engine, _chat(1))
    assert "Reasoning: medium" in default  # the template's own default
    extra, _ = _turn(engine, _chat(1), template_kwargs='{"model_identity": "You are a careful tutor."}')
    assert extra.startswith("<|start|>system<|message|>You are a careful tutor.")

    qwen = thinking_engine("qwen3.jinja")
    off, _ = _turn(qwen, _chat(1), thinking=False)
    assert off.endswith("<think>\n\n</think>\n\n")
    via_kwargs, _ = _turn(qwen, _chat(1), template_kwargs='{"enable_thinking": false}')
    assert via_kwargs == off
    on, _ = _turn(qwen, _chat(1), thinking=True, template_kwargs='{"enable_thinking": false}')
    assert on.endswith("<|im_start|>assistant\n")  # the request's own setting wins over its kwargs


def test_a_template_that_reads_no_variable_is_unaffected_by_them():
    template = (TEMPLATES / "deepseek-r1-distill-qwen.jinja").read_text()
    plain = render_prompt(template, _chat(2))
    assert (
        render_prompt(
            template, _chat(2), variables={"enable_thinking": False, "reasoning_effort": "low", "anything": [1, 2]}
        ).text
        == plain.text
    )
    assert plain.opens_thinking


@pytest.mark.parametrize(
    "kwargs,words",
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('"enable_thinking"', "must be a JSON object"),
        ('{"messages": []}', "may not set messages"),
    ],
)
def test_bad_template_kwargs_are_a_clear_sentence(thinking_engine, kwargs, words):
    engine = thinking_engine("qwen3.jinja")
    with pytest.raises(PromptFormatError, match=words):
        list(engine.chat(_chat(1), GenerationConfig(max_tokens=2, template_kwargs=kwargs)))
    _, finished = _turn(engine, _chat(1))  # the engine goes on
    assert finished.stats.tokens > 0


def test_old_reasoning_under_any_name_reaches_the_template_that_reads_it():
    template = (TEMPLATES / "gpt-oss.jinja").read_text()
    # gpt-oss renders a reply's thinking when it is the last message and no generation prompt follows.
    reply = [{"role": "user", "content": "Hi"}]
    for key in ("reasoning_content", "reasoning", "thinking"):
        messages = reply + [{"role": "assistant", "content": "Hello.", key: "Greet back."}]
        text = render_prompt(template, messages, add_generation_prompt=False).text
        assert "<|channel|>analysis<|message|>Greet back.<|end|>" in text
    chatml = render_prompt(None, reply + [{"role": "assistant", "content": "Hello.", "reasoning": "Greet back."}])
    assert "Greet back" not in chatml.text  # a template that reads none gets none
