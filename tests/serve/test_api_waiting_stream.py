"""A streamed chat request that waits its turn behind other replies hears from the server at once (issue 55, item 1):
its headers, then a comment now and then until its reply streams; a failure before its first token is an event."""

from __future__ import annotations

import json
import threading

import pytest

from app.serve import http_app
from tests.serve.api_fixtures import DEADLINE_S, chat_body, client, running_api, streamed_text


def _open_stream(url: str, body: dict, seen: dict, gate: threading.Event) -> None:
    """Stream `body`; note the headers and every line as they come, and open the engine's gate at the first comment."""
    with client() as http:
        with http.stream("POST", f"{url}/v1/chat/completions", json={**body, "stream": True}) as response:
            seen["status"], seen["type"] = response.status_code, response.headers["content-type"]
            for line in response.iter_lines():
                seen.setdefault("lines", []).append(line)
                if line.startswith(":"):
                    gate.set()  # the engine answers only once the client has heard it waits


@pytest.fixture
def quick_comments(monkeypatch):
    monkeypatch.setattr(http_app, "HEADERS_AFTER_S", 0.05)
    monkeypatch.setattr(http_app, "WAITING_COMMENT_S", 0.05)


def test_a_waiting_streamed_request_gets_its_headers_and_comments_before_its_reply(tiny_models, quick_comments):
    gate = threading.Event()  # the engine is busy elsewhere until it opens
    with running_api(tiny_models, engine_gate=gate) as api:
        seen: dict = {}
        _open_stream(api.url, chat_body("the cat and the dog", 8), seen, gate)
    assert seen["status"] == 200 and seen["type"].startswith("text/event-stream")
    lines = [line for line in seen["lines"] if line]
    assert lines[0] == ": waiting"
    chunks = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    assert streamed_text(chunks) and lines[-1] == "data: [DONE]"


def test_a_waiting_streamed_request_that_fails_before_its_first_token_gets_an_error_event(tiny_models, quick_comments):
    gate = threading.Event()
    with running_api(tiny_models, engine_gate=gate) as api:
        seen: dict = {}
        too_long = " ".join(f"word{i}" for i in range(4000))  # more than the engine's 2,048-token context
        _open_stream(api.url, chat_body(too_long, 8), seen, gate)
    assert seen["status"] == 200
    events = [json.loads(line[6:]) for line in seen["lines"] if line.startswith("data: {")]
    assert len(events) == 1 and events[0]["error"]["message"].endswith(".")
    assert gate.wait(DEADLINE_S)
