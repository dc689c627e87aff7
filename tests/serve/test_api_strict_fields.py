"""Junk in a request's fields is a 400 naming the field, never a reply that quietly ignores it or a 500: `n: true`,
`n: 1.0`, a `top_k` or `seed` of 10^30, `timings_per_token: 5`, `strict: "yes"`, a `reasoning_format` that is a list,
and an earlier call's `arguments` nested thousands deep; `serve --host` and the settings' `api_host` with shell
characters are refused with a sentence. A reply that a client's schema forces into JSON nested
deeper than Python reads, while tools are offered, is the reply's text (it is no call), streamed or whole."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.serve.api_fixtures import DEADLINE_S, chat_body, client, running_api, stream_chunks, streamed_text
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]

TOOL = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}


def _deep_arguments(levels: int) -> dict:
    arguments = '{"a": ' + "[" * levels + "]" * levels + "}"
    return chat_body(
        "again",
        4,
        messages=[
            {"role": "user", "content": "look it up"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": arguments}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "found"},
        ],
    )


JUNK = [
    ({"n": True}, '"n" must be 1'),
    ({"n": 1.0}, '"n" must be 1'),
    ({"top_k": 10**30}, '"top_k" must be a whole number from 0 to 2147483647'),
    ({"top_k": True}, '"top_k"'),
    ({"seed": 10**30}, '"seed" must be a whole number from 0 to 9223372036854775807'),
    ({"timings_per_token": 5}, '"timings_per_token" must be true or false'),
    ({"stream_options": {"include_usage": "yes"}}, '"stream_options.include_usage" must be true or false'),
    ({"logprobs": 1}, '"logprobs" must be true or false'),
    (
        {"tools": [{"type": "function", "function": {"name": "f", "strict": "yes"}}]},
        '"tools[0].function.strict" must be true or false',
    ),
    (
        {
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "x", "strict": "yes", "schema": {"type": "object"}},
            }
        },
        '"response_format.json_schema.strict" must be true or false',
    ),
    ({"reasoning_format": ["none"]}, '"reasoning_format" must be'),
    ({"reasoning_format": {"none": 1}}, '"reasoning_format" must be'),
    ({"reasoning_effort": ["low"]}, '"reasoning_effort" must be'),
    ({"json_schema": {"type": "object"}}, '"json_schema" is not supported by this server'),
    ({"thinking_budget_tokens": 10**30}, '"thinking_budget_tokens" must be a whole number'),
    ({"reasoning": {"max_tokens": 10**30}}, '"reasoning.max_tokens" must be a whole number'),
]


def _refused(response, said: str) -> None:
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert said in message and message.endswith(".") and "\n" not in message, message


@pytest.fixture(scope="module")
def api(tiny_models):
    with running_api(tiny_models, draft=False) as api:
        yield api


@pytest.mark.parametrize("extra,said", JUNK)
def test_junk_in_a_field_is_a_400_naming_it(api, extra, said):
    with client() as http:
        for stream in (False, True):
            _refused(http.post(f"{api.url}/v1/chat/completions", json=chat_body("hi", 4, stream=stream, **extra)), said)
        answer = http.post(f"{api.url}/v1/chat/completions", json=chat_body("hi", 4))
    assert answer.status_code == 200


@pytest.mark.parametrize("levels", [5000, 60])
def test_an_earlier_calls_arguments_nested_too_deep_are_a_400(api, levels):
    body = _deep_arguments(levels)
    with client() as http:
        for stream in (False, True):
            _refused(
                http.post(f"{api.url}/v1/chat/completions", json={**body, "stream": stream}),
                "messages[1].tool_calls[0].function.arguments nests deeper than the 64 levels a request may",
            )
        assert http.post(f"{api.url}/v1/chat/completions", json=_deep_arguments(20)).status_code == 200


@pytest.mark.slow
def test_a_reply_forced_deeper_than_python_reads_is_text_not_a_500(api):
    # {"c": [[[[... for ever: the grammar leaves the model no other way to write, until max_tokens.
    schema = {
        "type": "object",
        "properties": {"c": {"$ref": "#/definitions/n"}},
        "required": ["c"],
        "definitions": {"n": {"type": "array", "items": {"$ref": "#/definitions/n"}, "minItems": 1, "maxItems": 1}},
    }
    body = chat_body(
        "nest",
        1400,
        tools=[TOOL],
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
    )
    with client() as http:
        whole = http.post(f"{api.url}/v1/chat/completions", json=body)
    assert whole.status_code == 200, whole.text
    message = whole.json()["choices"][0]["message"]
    assert message["content"].startswith('{"c":') and message["content"].count("[") > 1000
    assert not message.get("tool_calls")
    chunks = stream_chunks(api.url, body)
    assert not any("error" in c for c in chunks) and streamed_text(chunks) == message["content"]
    assert json.dumps(chunks[-1])  # the stream ended with its last chunk, not cut


def test_serve_refuses_a_host_with_shell_characters(tiny_models):
    done = run_cli("serve", "--target", str(tiny_models.target), "--host", "127.0.0.1;reboot", timeout=DEADLINE_S)
    assert done.returncode == 2 and "--host must be a host name or an IP address" in done.stderr, done.stderr


def test_a_failure_of_ours_mid_stream_is_an_error_event_not_a_cut_stream(tiny_models, monkeypatch):
    from app.serve.replies import ReplyShaper

    def broken(self, event):
        raise RuntimeError("a bug of ours")

    with running_api(tiny_models, draft=False) as api:
        monkeypatch.setattr(ReplyShaper, "on_token", broken)
        with client() as http:
            with http.stream(
                "POST", f"{api.url}/v1/chat/completions", json=chat_body("hi", 8, stream=True)
            ) as response:
                events = [json.loads(line[6:]) for line in response.iter_lines() if line.startswith("data: {")]
        monkeypatch.undo()
        assert events[-1] == {
            "error": {
                "message": "The server failed while answering this request; its log has the details.",
                "type": "server_error",
                "code": 500,
            }
        }
        with client() as http:
            assert http.post(f"{api.url}/v1/chat/completions", json=chat_body("hi", 4)).status_code == 200
