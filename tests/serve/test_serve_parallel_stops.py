"""`specchat-cli serve --parallel N` with stop strings and bursts: a request whose stop string comes is answered,
and so is every request decoded beside it; requests that fit the batch are never turned away as "busy"."""

from __future__ import annotations


import pytest

from tests.serve.api_fixtures import (
    chat_body,
    client,
    serving_process,
    stream_chunks,
    streamed_text,
    together,
)

# Each ask with a stop string its greedy reply from the tiny target writes a few tokens in.
ASKS = {"the cat and the dog": ["ing"], "def fibonacci(n):": ["ond"], "hello": ["it4"], "one two three": [" ", "e"]}


def _whole(url: str, body: dict) -> tuple[int, str, str]:
    """A whole reply's status, text and finish reason."""
    with client() as http:
        response = http.post(f"{url}/v1/chat/completions", json=body)
    if response.status_code != 200:
        return response.status_code, response.text, ""
    choice = response.json()["choices"][0]
    return 200, choice["message"]["content"], choice["finish_reason"]


def _streamed(url: str, body: dict) -> tuple[str, str]:
    """A streamed reply's text and finish reason."""
    chunks = stream_chunks(url, body)
    reasons = [c["choices"][0].get("finish_reason") for c in chunks if c["choices"]]
    return streamed_text(chunks), next((reason for reason in reasons if reason), "")


@pytest.mark.slow
def test_stop_strings_beside_plain_requests_are_all_answered_as_each_alone(tiny_models):
    plain = [chat_body(ask, max_tokens=32, temperature=0) for ask in ASKS]
    stopped = [chat_body(ask, max_tokens=32, temperature=0, stop=stop) for ask, stop in ASKS.items()]
    bodies = plain + stopped
    with serving_process("--target", tiny_models.target, "--parallel", 4, "--ctx", 512) as serve:
        alone = [_streamed(serve.url, body) for body in bodies]
        for (text, reason), (full, _) in zip(alone[4:], alone[:4]):
            assert reason == "stop" and full.startswith(text) and len(text) < len(full)  # the stop string came
        streamed = together([lambda body=body: _streamed(serve.url, body) for body in bodies])
        assert streamed == alone
        whole = together([lambda body=body: _whole(serve.url, body) for body in bodies])
        assert whole == [(200, text, reason) for text, reason in alone]


@pytest.mark.slow
def test_requests_that_fit_the_batch_are_never_busy(tiny_models):
    bodies = [chat_body(f"{ask} {i}", max_tokens=16, temperature=0) for i in range(2) for ask in ASKS]
    with serving_process("--target", tiny_models.target, "--parallel", 8, "--queue", 2, "--ctx", 256) as serve:
        replies = together([lambda body=body: _whole(serve.url, body) for body in bodies])
    assert [reply[0] if isinstance(reply, tuple) else reply for reply in replies] == [200] * 8
