"""Ollama's `images` (base64 pictures in a message) reach a model that sees: its /api/show lists `vision`, the
official ollama client gets the reply the OpenAI route gives for the same picture, and damaged base64 gets one
sentence."""

from __future__ import annotations

import base64

import ollama
import pytest

from tests.serve.api_fixtures import DEADLINE_S, client, serving_process

pytestmark = pytest.mark.slow  # a serve process of its own
QUESTION = "What is in this picture?"


@pytest.fixture(scope="module")
def served(vision_models):
    with serving_process("--target", vision_models.target) as serve:  # the projector beside it is found by name
        yield serve.url


def test_a_picture_in_images_gets_the_openai_routes_reply(served, pictures):
    sdk = ollama.Client(host=served, timeout=DEADLINE_S)
    name = sdk.list().models[0].model
    assert "vision" in sdk.show(name).capabilities

    data = base64.b64encode(pictures[2].read_bytes()).decode()
    ask = {"role": "user", "content": QUESTION, "images": [data]}
    reply = sdk.chat(name, messages=[ask], options={"temperature": 0, "num_predict": 16}, stream=False)
    with client() as http:
        parts = [
            {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{data}"}},
            {"type": "text", "text": QUESTION},
        ]
        body = {"messages": [{"role": "user", "content": parts}], "temperature": 0, "max_tokens": 16}
        expected = http.post(served + "/v1/chat/completions", json=body).json()["choices"][0]["message"]["content"]
        damaged = http.post(
            served + "/api/chat",
            json={"model": name, "messages": [{**ask, "images": ["%%%"]}], "stream": False},
        )
    assert reply.message.content == expected
    assert damaged.status_code == 400 and damaged.json() == {"error": "messages[0].images[0] is not base64 data."}
