"""Ollama's official Python client against `serve` with the real Qwen2.5-Coder 1.5B (greedy, the 0.5B drafting):
a tool is called with its arguments as an object, streamed and whole, and the tool's result, sent back as Ollama's
clients send it (`tool_name`, no call id), gets an answer that uses it."""

from __future__ import annotations

import json

import ollama
import pytest

from tests.serve.api_fixtures import DEADLINE_S, serving_process
from tests.serve.test_tools_openai_sdk import WEATHER

pytestmark = [pytest.mark.real_models, pytest.mark.slow]

ASK = [{"role": "user", "content": "What is the weather like in Paris right now?"}]
GREEDY = {"temperature": 0, "num_predict": 120}


@pytest.fixture(scope="module")
def sdk(real_models):
    with serving_process("--target", real_models["target"], "--draft", real_models["draft"]) as serve:
        name = real_models["target"].name.removesuffix(".gguf")
        yield ollama.Client(host=serve.url, timeout=DEADLINE_S * 4), name


def test_a_call_has_its_arguments_as_an_object_and_its_result_is_answered(sdk):
    client, name = sdk
    assert "tools" in client.show(name).capabilities

    whole = client.chat(name, messages=ASK, tools=[WEATHER], options=GREEDY, stream=False)
    call = whole.message.tool_calls[0]
    assert call.function.name == "get_weather" and call.function.arguments == {"city": "Paris"}

    streamed = [
        c
        for line in client.chat(name, messages=ASK, tools=[WEATHER], options=GREEDY, stream=True)
        for c in line.message.tool_calls or []
    ]
    assert [(c.function.name, c.function.arguments) for c in streamed] == [("get_weather", {"city": "Paris"})]

    result = {"role": "tool", "tool_name": "get_weather", "content": json.dumps({"temperature_c": 17, "sky": "rainy"})}
    answer = client.chat(
        name, messages=[*ASK, whole.message, result], options={"temperature": 0, "num_predict": 80}, stream=False
    )
    text = answer.message.content
    assert answer.done_reason == "stop" and ("17" in text or "rain" in text.lower()), text
