"""A thinking model through the remote engine: the reasoning a server sends beside the content (llama-server's and
LM Studio's `reasoning_content`, vLLM's and Ollama's `reasoning`) arrives as thinking, apart from the answer, with
its drafts counted where the server's counters tell; and the request's thinking settings reach the server."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent, TokenEvent
from app.engine.remote.engine import RemoteEngine
from app.engine.targets import ServerModel
from tests.remote.fake_openai_server import FakeServer, Script, delta_chunk


def _timings(n, drafted=0, accepted=0):
    timings = {"predicted_n": n, "predicted_per_second": 40.0, "prompt_n": 9, "cache_n": 0}
    if drafted:
        timings.update(draft_n=drafted, draft_n_accepted=accepted)
    return timings


def _reply(server: FakeServer, config: GenerationConfig, model: str = "fake-model"):
    engine = RemoteEngine(api_key_for=lambda url: None)
    engine.load_target(ServerModel.at(server.url, model))
    events = list(engine.chat([{"role": "user", "content": "Is 221 prime?"}], config))
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    finished = [e for e in events if isinstance(e, FinishedEvent)]
    assert len(finished) == 1
    return tokens, finished[0], server.requests[-1]


# llama-server with --reasoning-format deepseek and a draft model, as it streams with "timings_per_token": two
# plain thinking tokens, a round in the thinking that drafts 3 and keeps 2 (then the target's own token), then the
# answer, where a round drafts 2 and keeps both.
LLAMA_SERVER_THINKING = [
    delta_chunk({"role": "assistant", "content": None}),
    delta_chunk({"reasoning_content": "221"}, _timings(1)),
    delta_chunk({"reasoning_content": " is"}, _timings(2)),
    delta_chunk({"reasoning_content": " 13"}, _timings(3, drafted=3, accepted=2)),
    delta_chunk({"reasoning_content": " times"}, _timings(4, drafted=3, accepted=2)),
    delta_chunk({"reasoning_content": " 17."}, _timings(5, drafted=3, accepted=2)),
    delta_chunk({"content": "No"}, _timings(7, drafted=3, accepted=2)),  # `</think>` and "\n" sent no text
    delta_chunk({"content": ","}, _timings(8, drafted=5, accepted=4)),
    delta_chunk({"content": " 13"}, _timings(9, drafted=5, accepted=4)),
    delta_chunk({"content": " × 17."}, _timings(10, drafted=5, accepted=4)),
    delta_chunk({}, _timings(10, drafted=5, accepted=4), "stop"),
]


def test_llama_server_reasoning_content_is_thinking_with_its_drafts_and_the_settings_are_sent():
    config = GenerationConfig(
        max_tokens=64,
        thinking=True,
        reasoning_effort="high",
        thinking_budget=128,
        template_kwargs='{"preserve_thinking": true}',
    )
    with FakeServer(Script(chunks=LLAMA_SERVER_THINKING)) as server:
        tokens, finished, body = _reply(server, config)
    assert finished.reasoning == "221 is 13 times 17."
    assert finished.text == "No, 13 × 17."
    assert "".join(t.text for t in tokens if t.part == "reasoning") == finished.reasoning
    assert "".join(t.text for t in tokens if t.part == "answer") == finished.text
    # The thinking is highlighted where the server's counters put its drafts: the round's 2 kept tokens.
    assert [(t.text, t.source) for t in tokens if t.part == "reasoning"] == [
        ("221", "target"),
        (" is", "target"),
        (" 13", "draft"),
        (" times", "draft"),
        (" 17.", "target"),
    ]
    assert [t.source for t in tokens if t.part == "answer" and t.text][-3:] == ["draft", "draft", "target"]
    stats = finished.stats
    assert (stats.tokens, stats.reasoning_tokens, stats.reasoning_drafted, stats.reasoning_accepted) == (10, 5, 3, 2)
    assert (stats.drafted, stats.accepted) == (5, 4)
    assert not stats.ended_in_reasoning and stats.reasoning_s >= 0
    assert body["chat_template_kwargs"] == {
        "preserve_thinking": True,
        "enable_thinking": True,
        "reasoning_effort": "high",
    }
    assert body["reasoning_effort"] == "high" and body["thinking_budget_tokens"] == 128


def test_vllm_reasoning_field_without_timings_and_a_chunk_holding_both_parts():
    chunks = [
        delta_chunk({"role": "assistant"}),
        delta_chunk({"reasoning": "The user greets."}),
        delta_chunk({"reasoning": " Greet back.", "content": "Hello"}),  # the boundary inside one event
        delta_chunk({"content": "!"}),
        delta_chunk({}, None, "stop"),
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 12,
                "completion_tokens": 9,
                "completion_tokens_details": {"reasoning_tokens": 6},
            },
        },
    ]
    with FakeServer(Script(models=[("Qwen/Qwen3-8B", "vllm")], chunks=chunks)) as server:
        tokens, finished, body = _reply(server, GenerationConfig(max_tokens=64, thinking=False), "Qwen/Qwen3-8B")
    assert (finished.reasoning, finished.text) == ("The user greets. Greet back.", "Hello!")
    # The answer's start in the same event follows the thinking's token as a tail of its own (token_id -1).
    assert [(t.text, t.part) for t in tokens] == [
        ("The user greets.", "reasoning"),
        (" Greet back.", "reasoning"),
        ("Hello", "answer"),
        ("!", "answer"),
    ]
    assert [t.index for t in tokens] == [0, 1, 2, 2]  # a tail takes the next index, as a flushed one does
    assert finished.stats.reasoning_tokens == 6  # the server's own count
    assert finished.stats.tokens == 9
    assert body["chat_template_kwargs"] == {"enable_thinking": False}
    assert "thinking_budget_tokens" not in body and "reasoning_effort" not in body  # llama-server's field, unset


def test_a_server_that_sends_both_names_is_read_once_and_whole_messages_are_read_too():
    chunks = [
        delta_chunk({"reasoning_content": "Think.", "reasoning": "Think."}),
        {
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": "Done.", "reasoning_content": " More."},
                    "finish_reason": "stop",
                }
            ]
        },
    ]
    with FakeServer(Script(models=[("m", "lmstudio")], chunks=chunks)) as server:
        _, finished, body = _reply(server, GenerationConfig(max_tokens=16), "m")
    assert (finished.reasoning, finished.text) == ("Think. More.", "Done.")
    # No thinking setting asked for: no field a server might refuse.
    assert "chat_template_kwargs" not in body and "reasoning_effort" not in body


def test_a_reply_cut_off_while_thinking_says_so_and_has_no_answer():
    chunks = [
        delta_chunk({"reasoning_content": "Let me count"}, _timings(1)),
        delta_chunk({"reasoning_content": " the"}, _timings(2)),
        delta_chunk({"reasoning_content": " divisors"}, _timings(3)),
        delta_chunk({}, _timings(3), "length"),
    ]
    with FakeServer(Script(chunks=chunks)) as server:
        _, finished, _ = _reply(server, GenerationConfig(max_tokens=3))
    assert finished.text == "" and finished.reasoning == "Let me count the divisors"
    assert finished.stats.ended_in_reasoning and finished.stats.stop_reason == "max_tokens"
    assert finished.stats.reasoning_tokens == 3


@pytest.mark.parametrize("value", [None, 42, {"text": "x"}, ["x"]])
def test_reasoning_of_an_unknown_shape_is_no_reasoning_and_the_answer_still_comes(value):
    chunks = [delta_chunk({"reasoning": value, "content": "Answer."}), delta_chunk({}, None, "stop")]
    with FakeServer(Script(models=[("m", "ollama")], chunks=chunks)) as server:
        tokens, finished, _ = _reply(server, GenerationConfig(max_tokens=16), "m")
    assert (finished.text, finished.reasoning) == ("Answer.", "")
    assert all(t.part == "answer" for t in tokens)
