"""`specchat-cli serve --parallel N`: requests sent together are answered side by side, each reply the one it gets
alone, a client that leaves ends its own reply only, each request has the context asked for (within the trained
one), and requests whose KV caches cannot fit the memory are refused at start."""

from __future__ import annotations

import json
import threading

import pytest

from app.testing.synthetic import TinyShape, write_tiny_model
from tests.serve.api_fixtures import (
    DEADLINE_S,
    chat_body,
    client,
    serving_process,
    stream_chunks,
    streamed_text,
    together,
)
from tests.support.processes import run_cli

ASKS = ["the cat and the dog", "def fibonacci(n):"]


@pytest.fixture(scope="module")
def served(tiny_models):
    """serve --parallel 2 with the tiny pair on a free port; its base URL."""
    with serving_process(
        "--target", tiny_models.target, "--draft", tiny_models.draft, "--parallel", 2, "--ctx", 1024
    ) as serve:
        assert "2 requests at once" in serve.first
        assert "2 requests at once: 2 x " in serve.lines.get(timeout=DEADLINE_S)  # what their KV caches take
        yield serve.url


@pytest.mark.slow
def test_two_requests_at_once_are_each_the_reply_alone(served):
    bodies = [chat_body(ask, max_tokens=48, temperature=0) for ask in ASKS]
    alone = [streamed_text(stream_chunks(served, body)) for body in bodies]
    side_by_side = together([lambda body=body: streamed_text(stream_chunks(served, body)) for body in bodies])
    assert side_by_side == alone
    with client() as http:  # whole replies too, and /v1/models while they run
        replies = together(
            [lambda body=body: http.post(f"{served}/v1/chat/completions", json=body).json() for body in bodies]
            + [lambda: http.get(f"{served}/v1/models").status_code]
        )
    assert [reply["choices"][0]["message"]["content"] for reply in replies[:2]] == alone
    assert replies[2] == 200


@pytest.mark.slow
def test_a_client_that_leaves_ends_its_own_reply_only(served):
    kept_body = chat_body(ASKS[1], max_tokens=64, temperature=0)
    alone = streamed_text(stream_chunks(served, kept_body))
    started = threading.Event()

    def kept() -> str:
        chunks = []
        with client() as http:
            with http.stream("POST", f"{served}/v1/chat/completions", json={**kept_body, "stream": True}) as response:
                for line in response.iter_lines():
                    if line.startswith("data: ") and line != "data: [DONE]":
                        chunks.append(json.loads(line[len("data: ") :]))
                        started.set()
        return streamed_text(chunks)

    def leaving() -> int:
        assert started.wait(DEADLINE_S)  # sent after the kept one: through an "up to" flag it would stop that too
        seen = 0
        with client() as http:
            body = chat_body(ASKS[0], max_tokens=2000, temperature=0)
            with http.stream("POST", f"{served}/v1/chat/completions", json={**body, "stream": True}) as response:
                for line in response.iter_lines():
                    seen += line.startswith("data: ")
                    if seen >= 3:
                        break  # the client goes away mid-reply
        return seen

    kept_text, seen = together([kept, leaving])
    assert seen == 3
    assert kept_text == alone


@pytest.mark.slow
def test_each_of_four_requests_gets_the_context_asked_within_the_trained_one(tiny_models):
    """The tiny target was trained on 2,048 tokens: with --parallel 4 --ctx 2048 each request still has 2,048 (not a
    quarter of them), so a 1,500-token prompt is answered."""
    prompt = "the cat and the dog " * 190
    with serving_process("--target", tiny_models.target, "--parallel", 4, "--ctx", 2048) as serve:
        assert "4 requests at once" in serve.first
        with client() as http:
            body = {"model": "tiny-target", "prompt": prompt, "max_tokens": 4, "temperature": 0}
            response = http.post(f"{serve.url}/v1/completions", json=body)
        assert response.status_code == 200, response.text
        assert 1024 < response.json()["usage"]["prompt_tokens"] < 2048
        assert "for 2,048 tokens each" in serve.lines.get(timeout=DEADLINE_S)  # what the start said


@pytest.mark.slow
def test_requests_whose_caches_cannot_fit_the_memory_are_refused_at_start(tmp_path):
    """16 requests of a context of 2^30 tokens each would take terabytes of KV cache: serve says so with the
    numbers and ends, before llama.cpp tries to allocate it."""
    huge = write_tiny_model(tmp_path / "huge-context.gguf", n_layer=2, shape=TinyShape(context_length=1 << 30))
    done = run_cli(
        "serve", "--target", huge, "--parallel", 16, "--ctx", 1 << 30, "--port", 0, "--threads", 1, timeout=DEADLINE_S
    )
    assert done.returncode == 1, done.stderr
    said = done.stderr.strip().splitlines()[-1]
    assert "16 requests at once of 1,073,741,824 tokens each need" in said, done.stderr
    assert "of KV cache, more than the" in said and "ask for a smaller context." in said
