"""No request ends the server: a template that runs out of budget, forty thousand messages, numbers and text that
Python cannot hold each get a 400 with one sentence, and the next well-behaved request is answered."""

from __future__ import annotations

import json

import pytest

from app.engine.local import chat_format
from tests.serve.api_fixtures import chat_body, client, running_api


def _post(url: str, body):
    with client() as http:
        if isinstance(body, bytes):
            return http.post(f"{url}/v1/chat/completions", content=body, headers={"Content-Type": "application/json"})
        return http.post(f"{url}/v1/chat/completions", json=body)


def _sentence(response) -> str:
    message = response.json()["error"]["message"]
    assert message.endswith(".") and "Traceback" not in message and "\n" not in message, message
    return message


def _still_answers(url: str) -> None:
    answer = _post(url, chat_body("hi", 4))
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"]


def test_a_template_out_of_budget_is_a_400_and_the_server_goes_on(tiny_models, monkeypatch):
    with running_api(tiny_models) as api:
        # Budgets so small that even ChatML, the fallback, runs out: what a huge conversation once did to serve.
        monkeypatch.setattr(chat_format, "BASE_STEPS", 3)
        monkeypatch.setattr(chat_format, "STEPS_PER_MESSAGE", 0)
        refused = _post(api.url, chat_body("hi", 4))
        monkeypatch.undo()
        assert refused.status_code == 400 and "could not be formatted" in _sentence(refused)
        _still_answers(api.url)


def test_forty_thousand_short_messages_are_a_400(tiny_models):
    body = {"model": "tiny-target", "max_tokens": 4, "messages": [{"role": "user", "content": "hi"}] * 40_000}
    with running_api(tiny_models) as api:
        refused = _post(api.url, body)
        assert refused.status_code == 400 and "40000 messages" in _sentence(refused)
        _still_answers(api.url)


@pytest.mark.parametrize(
    "raw, said",
    [
        (b'{"messages": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nests deeper"),
        (
            b'{"model": "x", "max_tokens": ' + b"9" * 5000 + b', "messages": [{"role": "user", "content": "hi"}]}',
            "too long",
        ),
        (
            b'{"model": "x", "temperature": 1' + b"0" * 400 + b', "messages": [{"role": "user", "content": "hi"}]}',
            "temperature",
        ),
        (json.dumps({"model": "x", "messages": [{"role": "user", "content": "a\ud800b"}]}).encode(), "surrogate"),
    ],
)
def test_bodies_python_cannot_hold_get_one_sentence(tiny_models, raw, said):
    with running_api(tiny_models) as api:
        refused = _post(api.url, raw)
        assert refused.status_code == 400 and said in _sentence(refused)
        _still_answers(api.url)
