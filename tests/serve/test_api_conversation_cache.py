"""Two API clients taking turns (an editor and an agent, say) each find their own conversation's KV cache: a turn
reads only its new messages, and usage says how many prompt tokens came from the cache."""

from __future__ import annotations

import pytest

from tests.serve.api_fixtures import client, running_api


def _conversation(topic: str) -> list[dict]:
    messages = [{"role": "system", "content": "You answer briefly."}]
    for turn in range(3):
        text = " ".join(f"{topic}{(turn * 40 + i) % 97}" for i in range(40))
        messages += [{"role": "user", "content": text}, {"role": "assistant", "content": f"Noted {turn}."}]
    return messages[:-1]


def _turn(url: str, messages: list[dict]) -> dict:
    with client() as http:
        reply = http.post(
            f"{url}/v1/chat/completions", json={"model": "tiny-target", "messages": messages, "max_tokens": 8}
        ).json()
    messages.append({"role": "assistant", "content": reply["choices"][0]["message"]["content"]})
    return reply["usage"]


@pytest.mark.slow
def test_two_clients_taking_turns_each_read_only_their_new_tokens(tiny_models):
    editor, agent = _conversation("lamp"), _conversation("rope")
    with running_api(tiny_models) as api:
        first = [_turn(api.url, editor), _turn(api.url, agent)]
        later = []
        for turn in range(2):
            for messages in (editor, agent):
                messages.append({"role": "user", "content": f"And then, step {turn}?"})
                later.append(_turn(api.url, messages))
    assert all(u["prompt_tokens_details"]["cached_tokens"] < 0.1 * u["prompt_tokens"] for u in first), first
    for usage in later:
        assert usage["prompt_tokens_details"]["cached_tokens"] >= 0.9 * usage["prompt_tokens"], later
