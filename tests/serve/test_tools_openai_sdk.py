"""The official `openai` SDK against `serve` with the real Qwen2.5-Coder 1.5B (greedy, the 0.5B drafting): a tool
is called with valid arguments, streamed and not; the tool's result gets an answer that uses it; tool_choice
"required" always yields a call; response_format json_schema yields JSON that validates (tests/engine/local/test_grammar_lossless.py: speculation under the
same schemas)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from app.engine.config import LoadSettings
from tests.serve.api_fixtures import openai_sdk_serving

pytestmark = pytest.mark.real_models

WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city name"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def sdk(real_models):
    with openai_sdk_serving(real_models["target"], real_models["draft"], load=LoadSettings(n_ctx=4096)) as client:
        yield client


def _ask(city: str) -> list[dict]:
    return [{"role": "user", "content": f"What is the weather like in {city} right now?"}]


def test_the_sdk_gets_a_call_with_valid_arguments_whole_and_streamed(sdk):
    whole = sdk.chat.completions.create(
        model="m", messages=_ask("Paris"), tools=[WEATHER], temperature=0, max_tokens=120
    )
    choice = whole.choices[0]
    assert choice.finish_reason == "tool_calls", choice.message.content
    call = choice.message.tool_calls[0]
    assert call.function.name == "get_weather"
    assert json.loads(call.function.arguments)["city"] == "Paris"

    with sdk.chat.completions.stream(
        model="m", messages=_ask("Paris"), tools=[WEATHER], temperature=0, max_tokens=120
    ) as stream:
        final = stream.get_final_completion()  # the SDK assembles the streamed frames
    streamed = final.choices[0].message.tool_calls[0]
    assert (streamed.function.name, json.loads(streamed.function.arguments)) == (
        call.function.name,
        json.loads(call.function.arguments),
    )

    # With the tool still offered the 1.5B calls it again (seen 2026-12-02); an agent that wants the answer says
    # tool_choice "none", which renders the result without the tools.
    answer = sdk.chat.completions.create(
        model="m",
        temperature=0,
        max_tokens=80,
        tools=[WEATHER],
        tool_choice="none",
        messages=[
            *_ask("Paris"),
            {"role": "assistant", "content": None, "tool_calls": [call.model_dump()]},
            {"role": "tool", "tool_call_id": call.id, "content": json.dumps({"temperature_c": 17, "sky": "rainy"})},
        ],
    )
    text = answer.choices[0].message.content or ""
    assert answer.choices[0].finish_reason == "stop"
    assert "17" in text or "rain" in text.lower(), text


@pytest.mark.parametrize("question", ["Tell me a joke.", "What is 2 + 2?", "Write hello world in C."])
def test_tool_choice_required_always_yields_a_call(sdk, question):
    reply = sdk.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": question}],
        tools=[WEATHER],
        tool_choice="required",
        temperature=0,
        max_tokens=60,
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls", choice.message.content
    assert choice.message.tool_calls[0].function.name == "get_weather"
    json.loads(choice.message.tool_calls[0].function.arguments)


SCHEMAS = [
    {
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
        "required": ["city", "population"],
    },
    {
        "type": "object",
        "properties": {"name": {"type": "string"}, "languages": {"type": "array", "items": {"type": "string"}}},
        "required": ["name", "languages"],
    },
    {
        "type": "object",
        "properties": {"answer": {"type": "integer"}, "explanation": {"type": "string"}},
        "required": ["answer", "explanation"],
    },
    {
        "type": "object",
        "properties": {
            "function_name": {"type": "string"},
            "args": {"type": "array", "items": {"type": "string"}},
            "returns": {"type": "string", "enum": ["int", "str", "list", "None"]},
        },
        "required": ["function_name", "args", "returns"],
    },
    {
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "done": {"type": "boolean"},
            "priority": {"type": "integer", "minimum": 1, "maximum": 5},
        },
        "required": ["title", "done", "priority"],
    },
]
QUESTIONS = [
    "Describe Paris.",
    "Describe the Python language's creator.",
    "What is 6 times 7?",
    "Describe a Python function that adds two numbers.",
    "Make a todo item for buying milk.",
]


def test_response_format_json_schema_yields_json_that_validates(sdk):
    reply = sdk.chat.completions.create(
        model="m",
        temperature=0,
        max_tokens=120,
        messages=[{"role": "user", "content": QUESTIONS[0]}],
        response_format={"type": "json_schema", "json_schema": {"name": "city", "schema": SCHEMAS[0]}},
    )
    jsonschema.validate(json.loads(reply.choices[0].message.content), SCHEMAS[0])
