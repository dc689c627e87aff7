"""/v1/responses over the tiny synthetic pair, read by the official `openai` SDK: streamed events in order and
numbered, the whole response, usage, refusals in one sentence, tools of every type accepted, a prompt too long
ending the stream with response.failed (context_length_exceeded)."""

from __future__ import annotations

import openai
import pytest

from tests.serve.api_fixtures import DEADLINE_S, client, running_api
from tests.serve.test_responses_events import TOOLS

LIFECYCLE = ("response.created", "response.in_progress")


@pytest.fixture(scope="module")
def api(tiny_models):
    with running_api(tiny_models) as running:
        yield running


@pytest.fixture()
def sdk(api):
    return openai.OpenAI(base_url=f"{api.url}/v1", api_key="none", timeout=DEADLINE_S, max_retries=0)


def test_a_streamed_response_reads_in_the_sdk_event_by_event(sdk):
    with sdk.responses.stream(model="tiny", input="Say hello.", max_output_tokens=12) as stream:
        events = list(stream)
    final = events[-1].response  # the token limit came first: the SDK's final response is completed ones' only
    kinds = [e.type for e in events]
    assert tuple(kinds[:2]) == LIFECYCLE
    assert kinds[-1] == "response.incomplete"
    assert [e.sequence_number for e in events] == list(range(len(events)))
    deltas = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert deltas and final.output_text == deltas
    assert kinds.index("response.output_item.added") < kinds.index("response.output_text.delta")
    assert kinds.index("response.output_text.done") < kinds.index("response.output_item.done")
    assert final.usage.output_tokens == 12 and final.usage.input_tokens > 0
    assert final.usage.input_tokens_details.cached_tokens >= 0
    assert final.status == "incomplete" and final.incomplete_details.reason == "max_output_tokens"


def test_a_whole_response_has_the_text_and_usage(sdk):
    response = sdk.responses.create(
        model="tiny",
        instructions="Be brief.",
        input=[{"role": "user", "content": [{"type": "input_text", "text": "Hello"}]}],
        max_output_tokens=8,
        store=False,
    )
    assert response.object == "response" and response.output_text
    assert response.output[0].type == "message" and response.output[0].content[0].type == "output_text"
    assert response.usage.output_tokens == 8 and response.instructions == "Be brief."


def test_tools_of_every_type_are_accepted(sdk):
    read_file = {"type": "function", "name": "read_file", "parameters": {"type": "object", "properties": {}}}
    tools = [read_file, *TOOLS, {"type": "image_generation"}, {"type": "local_shell"}]
    history = [
        {"type": "message", "role": "user", "content": "Fix it."},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "I should patch."}]},
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": "*** Begin Patch"},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "Done!"},
        {"type": "function_call", "call_id": "c2", "name": "read_file", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c2", "output": [{"type": "input_text", "text": "x = 1"}]},
    ]
    response = sdk.responses.create(model="tiny", input=history, tools=tools, max_output_tokens=6)
    assert response.status in ("completed", "incomplete")
    assert response.usage.input_tokens > 0


@pytest.mark.parametrize(
    "body, words",
    [
        ({"input": "Hi", "previous_response_id": "resp_1"}, "keeps no state"),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "keeps no state"),
        ({"input": [{"type": "message", "role": "robot", "content": "Hi"}]}, "input[0].role"),
        ({"input": "Hi", "max_output_tokens": 0}, '"max_output_tokens"'),
        ({"input": "Hi", "reasoning": {"effort": "huge"}}, '"reasoning.effort"'),
        ({"instructions": "Be\u0000 brief.", "input": "Hi"}, "instructions holds a NUL"),
        ({"input": [{"type": "function_call", "call_id": "c", "name": "f", "arguments": "{"}]}, "input[0]"),
    ],
)
def test_bad_requests_get_one_sentence(api, body, words):
    with client() as http:
        answer = http.post(f"{api.url}/v1/responses", json={"model": "tiny", **body})
    assert answer.status_code == 400
    assert words in answer.json()["error"]["message"]


def test_a_prompt_too_long_ends_the_stream_with_context_length_exceeded(sdk):
    with sdk.responses.stream(model="tiny", input="word " * 5000, max_output_tokens=4) as stream:
        events = list(stream)
    assert [e.type for e in events] == [*LIFECYCLE, "response.failed"]
    assert events[-1].response.error.code == "context_length_exceeded"


def test_models_carry_what_codex_reads_beside_openais_list(api):
    with client() as http:
        listed = http.get(f"{api.url}/v1/models").json()
    assert [m["id"] for m in listed["data"]] == ["tiny-target"]
    (model,) = listed["models"]
    assert model["slug"] == "tiny-target" and model["context_window"] == 2048
    assert model["apply_patch_tool_type"] == "freeform" and model["base_instructions"]


def test_a_prompt_too_long_is_a_400_with_its_code_when_not_streamed(api):
    with client() as http:
        answer = http.post(f"{api.url}/v1/responses", json={"model": "tiny", "input": "word " * 5000})
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "context_length_exceeded"
    assert "context holds" in answer.json()["error"]["message"]
