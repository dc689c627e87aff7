"""Ollama's official Python client against `specchat-cli serve` with the tiny pair: it finds the server (`/`,
/api/version), lists and describes the loaded model, chats and generates streamed and whole (the same greedy reply
either way, with Ollama's counters), sends a tool-call history back, and hears one sentence for what SpecChat does
otherwise (an unknown model, pulling, embeddings)."""

from __future__ import annotations

import json

import jsonschema
import ollama
import pytest

from tests.serve.api_fixtures import DEADLINE_S, chat_body, client, running_api, serving_process
from tests.serve.test_tools_openai_sdk import WEATHER

pytestmark = pytest.mark.slow  # a serve process of its own
GREEDY = {"temperature": 0, "num_predict": 12}
ASK = [{"role": "user", "content": "the cat and the dog"}]


@pytest.fixture(scope="module")
def served(tiny_models):
    with serving_process("--target", tiny_models.target, "--draft", tiny_models.draft, "--draft-max", 3) as serve:
        yield serve.url
    assert serve.process.returncode == 0


@pytest.fixture(scope="module")
def sdk(served):
    return ollama.Client(host=served, timeout=DEADLINE_S)


def test_clients_find_the_server_and_the_loaded_model(served, sdk, tiny_models):
    with client() as http:
        assert http.get(served + "/").text == "Ollama is running"
        assert http.head(served + "/").status_code == 200
        version = http.get(served + "/api/version").json()["version"]
    assert tuple(int(part) for part in version.split(".")) >= (0, 12, 0)  # clients compare it as numbers

    listed = sdk.list().models
    assert [m.model for m in listed] == ["tiny-target:latest"]
    assert listed[0].size == tiny_models.target.stat().st_size
    assert listed[0].details.format == "gguf" and listed[0].details.family
    assert [m.model for m in sdk.ps().models] == ["tiny-target:latest"]

    shown = sdk.show("tiny-target")
    assert "completion" in shown.capabilities and "vision" not in shown.capabilities
    architecture = shown.modelinfo["general.architecture"]
    assert 0 < shown.modelinfo[f"{architecture}.context_length"] <= 4096
    assert shown.details.family == architecture


def test_chat_streamed_and_whole_is_one_greedy_reply_with_ollamas_counters(sdk, served):
    whole = sdk.chat("tiny-target:latest", messages=ASK, options=GREEDY, stream=False)
    assert whole.done and whole.done_reason == "length" and whole.message.role == "assistant"
    assert whole.eval_count == 12 and whole.prompt_eval_count > 0
    assert whole.total_duration >= whole.eval_duration > 0

    lines = list(sdk.chat("tiny-target", messages=ASK, options=GREEDY, stream=True))
    assert "".join(line.message.content for line in lines) == whole.message.content
    assert [line.done for line in lines] == [False] * (len(lines) - 1) + [True]
    assert lines[-1].done_reason == "length" and lines[-1].eval_count == 12

    # A body that does not say streams, as Ollama's does: a JSON object per line.
    with client() as http:
        response = http.post(served + "/api/chat", json={"model": "tiny-target", "messages": ASK, "options": GREEDY})
    assert response.headers["content-type"] == "application/x-ndjson"
    raw_lines = [json.loads(line) for line in response.text.splitlines()]
    assert "".join(line["message"]["content"] for line in raw_lines) == whole.message.content


def test_format_and_stop_shape_the_reply(sdk):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    shaped = sdk.chat("tiny-target", messages=ASK, format=schema, options={"num_predict": 40}, stream=False)
    jsonschema.validate(json.loads(shaped.message.content), schema)

    whole = sdk.chat("tiny-target", messages=ASK, options=GREEDY, stream=False).message.content
    stop = whole[len(whole) // 2 : len(whole) // 2 + 2]
    cut = sdk.chat("tiny-target", messages=ASK, options={**GREEDY, "stop": [stop]}, stream=False)
    assert whole.startswith(cut.message.content) and stop not in cut.message.content
    assert cut.done_reason == "stop"


def test_generate_answers_a_prompt_streamed_and_whole(sdk, served):
    whole = sdk.generate("tiny-target", prompt="the cat and the dog", options=GREEDY)
    assert whole.done and whole.eval_count == 12 and whole.response
    streamed = list(sdk.generate("tiny-target", prompt="the cat and the dog", options=GREEDY, stream=True))
    assert "".join(line.response for line in streamed) == whole.response
    raw = sdk.generate("tiny-target", prompt="the cat and", raw=True, options={"num_predict": 5, "temperature": 0})
    assert raw.eval_count == 5
    # With no prompt Ollama loads the model ahead of use; it is loaded already.
    with client() as http:
        loaded = http.post(served + "/api/generate", json={"model": "tiny-target"}).json()
        loaded_chat = http.post(served + "/api/chat", json={"model": "tiny-target", "messages": []}).json()
    assert loaded["done"] and loaded["done_reason"] == "load"
    assert loaded_chat["done"] and loaded_chat["done_reason"] == "load"


def test_the_same_reply_as_the_openai_route(sdk, served):
    with client() as http:
        openai_reply = http.post(served + "/v1/chat/completions", json=chat_body(ASK[0]["content"], 12, temperature=0))
    expected = openai_reply.json()["choices"][0]["message"]["content"]
    assert sdk.chat("tiny-target", messages=ASK, options=GREEDY, stream=False).message.content == expected


def test_a_tool_call_history_is_sent_back_with_its_result(sdk):
    messages = [
        *ASK,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
        },
        {"role": "tool", "content": json.dumps({"sky": "rainy"}), "tool_name": "get_weather"},
    ]
    reply = sdk.chat("tiny-target", messages=messages, tools=[WEATHER], options=GREEDY, stream=False)
    assert reply.done and reply.eval_count > 0


@pytest.mark.parametrize(
    "path, body, status, says",
    [
        ("/api/chat", {"model": "llama3:8b", "messages": ASK}, 404, "model 'llama3:8b' not found"),
        ("/api/show", {"model": "tiny-target:q8"}, 404, "model 'tiny-target:q8' not found"),
        ("/api/chat", {"model": "tiny-target", "messages": ASK, "think": "very"}, 400, '"think" must be'),
        ("/api/chat", {"model": "tiny-target", "messages": ASK, "options": {"temprature": 1}}, 400, "temprature"),
        (
            "/api/chat",
            {"model": "tiny-target", "messages": ASK, "options": {"num_predict": 100000}},
            400,
            '"options.num_predict" is 100000; this server writes at most 4096 tokens per reply.',
        ),
        ("/api/pull", {"model": "llama3"}, 400, "SpecChat manages its own models"),
        ("/api/embed", {"model": "tiny-target", "input": "x"}, 400, "has no embedding model"),
    ],
)
def test_what_the_server_will_not_do_is_one_sentence_in_ollamas_shape(served, path, body, status, says):
    with client() as http:
        response = http.post(served + path, json=body)
    assert response.status_code == status
    assert says in response.json()["error"]


def test_the_client_hears_an_unknown_model_as_ollama_says_it(sdk):
    with pytest.raises(ollama.ResponseError) as raised:
        sdk.chat("qwen3:4b", messages=ASK, stream=False)
    assert raised.value.status_code == 404 and raised.value.error == "model 'qwen3:4b' not found"


def test_a_server_with_a_key_asks_ollamas_clients_for_it(tiny_models):
    with running_api(tiny_models, api_key="sesame", draft=False) as api:
        with pytest.raises(ollama.ResponseError) as raised:
            ollama.Client(host=api.url, timeout=DEADLINE_S).list()
        assert raised.value.status_code == 401 and "API key" in raised.value.error
        keyed = ollama.Client(host=api.url, timeout=DEADLINE_S, headers={"Authorization": "Bearer sesame"})
        assert [m.model for m in keyed.list().models] == ["tiny-target:latest"]
        assert keyed.show("tiny-target").modelinfo["general.architecture"]
