"""Thinking through Anthropic's Messages API, read by the `anthropic` SDK: a tiny model carrying DeepSeek-R1-Distill's
real template (its generation prompt opens the thinking; the budget closes it) streams a `thinking` block closed by
a `signature_delta` (without one Claude Code drops the turn), then the answer's `text` block; a thinking block sent
back in an assistant turn is accepted."""

from __future__ import annotations

import anthropic
import pytest

from app.testing.synthetic import write_tiny_model
from tests.serve.api_fixtures import DEADLINE_S, openai_sdk_serving
from tests.serve.test_reasoning_openai_sdk import R1_TEMPLATE

THINKING = {"type": "enabled", "budget_tokens": 8}


@pytest.fixture(scope="module")
def sdk(tmp_path_factory):
    model = write_tiny_model(
        tmp_path_factory.mktemp("r1") / "r1.gguf", extra_metadata=[("tokenizer.chat_template", R1_TEMPLATE.read_text())]
    )
    with openai_sdk_serving(model) as openai_client:
        url = str(openai_client.base_url).rstrip("/").removesuffix("/v1")
        yield anthropic.Anthropic(base_url=url, api_key="none", timeout=DEADLINE_S, max_retries=0)


def test_a_thinking_block_is_signed_before_it_closes_then_the_answer_follows(sdk):
    request = {"model": "m", "max_tokens": 24, "messages": [{"role": "user", "content": "Hi"}], "thinking": THINKING}
    with sdk.messages.stream(**request, extra_body={"temperature": 0}) as stream:
        events = list(stream)
        final = stream.get_final_message()
    assert [block.type for block in final.content] == ["thinking", "text"]
    thinking, answer = final.content
    assert thinking.thinking and thinking.signature and answer.text
    assert "think>" not in answer.text
    deltas = [e.delta.type for e in events if e.type == "content_block_delta" and e.index == 0]
    assert deltas[-1] == "signature_delta" and set(deltas[:-1]) == {"thinking_delta"}

    whole = sdk.messages.create(**request, extra_body={"temperature": 0})
    assert [(b.type, getattr(b, "thinking", None) or getattr(b, "text", None)) for b in whole.content] == [
        ("thinking", thinking.thinking),
        ("text", answer.text),
    ]

    again = sdk.messages.create(
        model="m",
        max_tokens=8,
        thinking=THINKING,
        messages=[
            {"role": "user", "content": "Hi"},
            {"role": "assistant", "content": [b.model_dump() for b in final.content]},
            {"role": "user", "content": "And again?"},
        ],
    )
    assert again.content
