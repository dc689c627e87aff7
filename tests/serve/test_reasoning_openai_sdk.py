"""The official `openai` SDK against `serve` with a thinking model: the reasoning arrives as `reasoning_content`
(and `reasoning`) in streamed deltas and in the whole message, `content` holds the answer alone with no markers,
and usage counts the reasoning tokens. A tiny model carrying DeepSeek-R1-Distill's real template (whose generation
prompt opens the thinking; a thinking budget closes it, so an answer follows), and the real Qwen2.5-Coder 1.5B
told to think by one example."""

from __future__ import annotations

from pathlib import Path

import openai
import pytest

from app.testing.synthetic import write_tiny_model
from tests.serve.api_fixtures import openai_sdk_serving
from tests.engine.reasoning.test_reasoning_real import THINK_BY_EXAMPLE

R1_TEMPLATE = Path(__file__).parents[1] / "fixtures" / "chat_templates" / "deepseek-r1-distill-qwen.jinja"


def _serving(target: Path, draft: Path | None = None):
    return openai_sdk_serving(target, draft)


def _streamed(client, **request) -> tuple[str, str, list]:
    reasoning, content, chunks = [], [], []
    for chunk in client.chat.completions.create(stream=True, **request):
        chunks.append(chunk)
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        extra = delta.model_extra or {}
        if extra.get("reasoning_content"):
            assert extra.get("reasoning") == extra["reasoning_content"]  # vLLM's and OpenRouter's name too
            reasoning.append(extra["reasoning_content"])
        if delta.content:
            content.append(delta.content)
    return "".join(reasoning), "".join(content), chunks


@pytest.fixture(scope="module")
def r1_tiny(tmp_path_factory):
    model = write_tiny_model(
        tmp_path_factory.mktemp("r1") / "r1.gguf", extra_metadata=[("tokenizer.chat_template", R1_TEMPLATE.read_text())]
    )
    with _serving(model) as client:
        yield client


def test_the_sdk_reads_reasoning_deltas_and_a_clean_answer(r1_tiny):
    request = {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 24,
        "temperature": 0,
        "extra_body": {"thinking_budget_tokens": 8},
    }
    reasoning, content, _ = _streamed(r1_tiny, **request)
    assert reasoning and content  # the budget closed the thinking, and an answer followed
    assert "think>" not in content and "think>" not in reasoning
    whole = r1_tiny.chat.completions.create(**request)
    message = whole.choices[0].message
    assert (message.model_extra["reasoning_content"], message.content) == (reasoning, content)
    assert whole.usage.completion_tokens_details.reasoning_tokens >= 8


def test_reasoning_format_none_keeps_the_thinking_in_content(r1_tiny):
    request = {
        "model": "m",
        "messages": [{"role": "user", "content": "Hi"}],
        "max_tokens": 24,
        "temperature": 0,
        "extra_body": {"thinking_budget_tokens": 8, "reasoning_format": "none"},
    }
    message = r1_tiny.chat.completions.create(**request).choices[0].message
    split = r1_tiny.chat.completions.create(**{**request, "extra_body": {"thinking_budget_tokens": 8}})
    # All of the reply is content, as written: its thinking (the prompt opened it) included, none sent apart.
    assert not (message.model_extra or {}).get("reasoning_content")
    assert message.content.strip().startswith(split.choices[0].message.model_extra["reasoning_content"].strip())


def test_a_bad_thinking_setting_is_a_400_naming_the_field(r1_tiny):
    with pytest.raises(openai.BadRequestError, match="reasoning_effort"):
        r1_tiny.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Hi"}], max_tokens=4, reasoning_effort="extreme"
        )


@pytest.mark.real_models
def test_the_real_model_thinks_through_the_api(real_models):
    with _serving(real_models["target"], real_models["draft"]) as client:
        reasoning, content, chunks = _streamed(
            client,
            model="m",
            max_tokens=160,
            temperature=0,
            messages=[
                {"role": "system", "content": THINK_BY_EXAMPLE},
                {"role": "user", "content": "Is 221 a prime number?"},
            ],
        )
    assert "221" in reasoning and content.strip() and "<think>" not in content and "</think>" not in content
    # Provenance per chunk covers the reasoning's tokens too.
    parts = {
        token["part"] for chunk in chunks for token in (chunk.model_extra or {}).get("specchat", {}).get("tokens", [])
    }
    assert parts == {"reasoning", "answer"}
