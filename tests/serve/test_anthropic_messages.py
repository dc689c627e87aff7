"""Anthropic's Messages API over the tiny models, read through the official `anthropic` SDK: whole and streamed
replies, stop sequences, token counts, tool results, keys sent as x-api-key, and errors in Anthropic's shape."""

from __future__ import annotations

import anthropic
import pytest

from tests.serve.api_fixtures import DEADLINE_S, client, running_api

KEY = "sk-test-anthropic"
# Newer SDKs have no `temperature` argument; the body still takes it, as Anthropic's API does.
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def api(tiny_models):
    with running_api(tiny_models, api_key=KEY) as running:
        yield running


@pytest.fixture
def sdk(api) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=api.url, api_key=KEY, timeout=DEADLINE_S, max_retries=0)


def _ask(text: str = "the cat and the dog") -> list[dict]:
    return [{"role": "user", "content": text}]


def test_a_whole_message_and_a_streamed_one_read_by_the_sdk(sdk):
    whole = sdk.messages.create(model="tiny", max_tokens=12, messages=_ask(), extra_body=GREEDY)
    assert whole.type == "message" and whole.role == "assistant"
    assert whole.stop_reason in ("end_turn", "max_tokens")
    assert whole.content and whole.content[0].type == "text" and whole.content[0].text
    assert whole.usage.input_tokens > 0 and whole.usage.output_tokens > 0

    with sdk.messages.stream(model="tiny", max_tokens=12, messages=_ask(), extra_body=GREEDY) as stream:
        events = [event.type for event in stream]
        final = stream.get_final_message()
    assert events[0] == "message_start" and events[-1] == "message_stop"
    assert "content_block_start" in events and "message_delta" in events
    assert final.content[0].text == whole.content[0].text  # greedy: the same reply either way
    assert final.stop_reason == whole.stop_reason
    assert final.usage.output_tokens == whole.usage.output_tokens


def test_a_stop_sequence_ends_the_reply_and_is_named(sdk):
    whole = sdk.messages.create(model="tiny", max_tokens=24, messages=_ask(), extra_body=GREEDY)
    text = whole.content[0].text
    word = text.split()[1] if len(text.split()) > 1 else text[2:4]
    stopped = sdk.messages.create(
        model="tiny", max_tokens=24, messages=_ask(), stop_sequences=[word], extra_body=GREEDY
    )
    assert stopped.stop_reason == "stop_sequence" and stopped.stop_sequence == word
    assert word not in stopped.content[0].text if stopped.content else True
    with sdk.messages.stream(
        model="tiny", max_tokens=24, messages=_ask(), stop_sequences=[word], extra_body=GREEDY
    ) as stream:
        final = stream.get_final_message()
    assert (final.stop_reason, final.stop_sequence) == ("stop_sequence", word)


def test_count_tokens_is_the_count_a_reply_reads(sdk):
    counted = sdk.messages.count_tokens(model="tiny", messages=_ask(), system="Be brief.")
    whole = sdk.messages.create(model="tiny", max_tokens=4, messages=_ask(), system="Be brief.")
    assert counted.input_tokens == whole.usage.input_tokens + (whole.usage.cache_read_input_tokens or 0)


def test_tool_use_and_tool_result_turns_are_accepted(sdk):
    tools = [{"name": "read_file", "description": "Read a file.", "input_schema": {"type": "object"}}]
    messages = [
        {"role": "user", "content": "Read a.txt"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {}}]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "hello"}]},
                {"type": "text", "text": "What does it say?", "cache_control": {"type": "ephemeral"}},
            ],
        },
    ]
    reply = sdk.messages.create(
        model="tiny",
        max_tokens=8,
        tools=tools,
        messages=messages,
        metadata={"user_id": "u"},
        tool_choice={"type": "auto"},
    )
    assert reply.stop_reason in ("end_turn", "max_tokens", "tool_use")


def test_bad_requests_get_anthropics_error_shape(api, sdk):
    with pytest.raises(anthropic.BadRequestError) as caught:
        sdk.messages.create(model="tiny", max_tokens=8, messages=[])
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    with client(KEY) as http:
        missing = http.post(f"{api.url}/v1/messages", json={"model": "tiny", "messages": _ask()})
        assert missing.status_code == 400
        assert "max_tokens" in missing.json()["error"]["message"]
        unknown = http.post(f"{api.url}/api/event_logging/batch", json={"events": []})
        assert unknown.status_code == 404


def test_the_key_is_read_from_x_api_key(api):
    with client() as http:
        body = {"model": "tiny", "max_tokens": 4, "messages": _ask()}
        refused = http.post(f"{api.url}/v1/messages", json=body)
        assert refused.status_code == 401 and refused.json()["error"]["type"] == "authentication_error"
        allowed = http.post(f"{api.url}/v1/messages", json=body, headers={"x-api-key": KEY})
        assert allowed.status_code == 200, allowed.text


def test_a_stream_pings_while_its_prompt_is_read(api, sdk, monkeypatch):
    # Pings every millisecond here (every PING_S seconds in use): reading a long prompt takes longer than that.
    monkeypatch.setattr("app.serve.anthropic.routes.PING_S", 0.001)
    body = {"model": "tiny", "max_tokens": 4, "messages": _ask("the cat and the dog " * 150), "stream": True}
    names = []
    with client(KEY) as http:
        with http.stream("POST", f"{api.url}/v1/messages", json=body) as response:
            assert response.status_code == 200
            names = [line[len("event: ") :] for line in response.iter_lines() if line.startswith("event: ")]
    first_block = names.index("content_block_start")
    assert names[0] == "message_start" and "ping" in names[1:first_block], names[:first_block]
    with sdk.messages.stream(model="tiny", max_tokens=4, messages=body["messages"]) as stream:
        assert stream.get_final_message().content  # the SDK reads past the pings


def test_a_retry_after_a_cut_stream_goes_on_from_the_prompt_already_read(api, sdk):
    messages = _ask("a dog and a cat " * 120)
    answered = len(api.done)
    body = {"model": "tiny", "max_tokens": 200, "messages": messages, "stream": True}
    with client(KEY) as http:
        with http.stream("POST", f"{api.url}/v1/messages", json=body) as response:
            for line in response.iter_lines():
                if line == "event: message_start":
                    break  # the client's idle limit fired: it hangs up while the prompt is read
    api.wait_done(answered + 1)
    retried = sdk.messages.create(model="tiny", max_tokens=4, messages=messages)
    assert retried.usage.cache_read_input_tokens > 0, retried.usage
