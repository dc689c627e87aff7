"""Anthropic's Messages bodies as the engine runs them: the prompt an agent's requests share stays the same from one
request to the next (the billing line dropped, system messages kept where they were), and bad bodies get one
sentence each."""

from __future__ import annotations

import pytest

from app.engine.config import GenerationConfig
from app.serve.anthropic.requests import parse_messages_request
from app.serve.errors import BadRequest
from app.serve.requests import ApiLimits

LIMITS = ApiLimits()
DEFAULTS = GenerationConfig(session="api", history=False)
BILLING = {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.197.8f6; cch=00a1f;"}


def _parse(**body):
    return parse_messages_request({"model": "m", "max_tokens": 64, **body}, LIMITS, DEFAULTS)


def test_the_billing_line_is_dropped_so_the_system_prompt_stays_the_same():
    first = _parse(
        system=[BILLING, {"type": "text", "text": "You are an agent."}], messages=[{"role": "user", "content": "hi"}]
    )
    other = {**BILLING, "text": "x-anthropic-billing-header: cc_version=2.1.197.8f6; cch=77b2c;"}
    second = _parse(
        system=[other, {"type": "text", "text": "You are an agent."}], messages=[{"role": "user", "content": "hi"}]
    )
    assert first.messages[0] == second.messages[0] == {"role": "system", "content": "You are an agent."}


def test_a_system_message_mid_conversation_stays_in_the_user_turn_before_it():
    reminder = {"role": "system", "content": "Agent types: general."}
    turn = [{"role": "user", "content": "Fix calc.py"}, reminder]
    first = _parse(system="S", messages=turn)
    later = _parse(
        system="S",
        messages=[
            *turn,
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x = 1"}]},
        ],
    )
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert "Agent types: general." in first.messages[1]["content"]
    assert later.messages[:2] == first.messages[:2]  # the next request begins with the same prompt
    assert later.messages[3] == {"role": "tool", "tool_call_id": "t1", "content": "x = 1"}


def test_a_system_message_after_the_assistant_goes_into_the_next_user_turn():
    parsed = _parse(
        messages=[
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "system", "content": "tokens left: 9000"},
            {"role": "user", "content": "c"},
        ]
    )
    assert [m["role"] for m in parsed.messages] == ["user", "assistant", "user"]
    assert parsed.messages[2]["content"].endswith("c") and "tokens left: 9000" in parsed.messages[2]["content"]


def test_thinking_tool_choice_and_sampling_reach_the_engine():
    parsed = _parse(
        messages=[
            {"role": "user", "content": "a"},
            {
                "role": "assistant",
                "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"}, {"type": "text", "text": "b"}],
            },
            {"role": "user", "content": "c"},
        ],
        thinking={"type": "enabled", "budget_tokens": 100},
        tools=[{"name": "Read", "input_schema": {"type": "object"}}],
        tool_choice={"type": "tool", "name": "Read"},
        temperature=0.2,
        top_k=5,
        stop_sequences=["END"],
    )
    assert parsed.config.thinking is True and parsed.config.thinking_budget == 100
    assert parsed.messages[1]["reasoning_content"] == "hmm"
    assert parsed.tools.choice == "function" and parsed.tools.function == "Read"
    assert (parsed.config.temperature, parsed.config.top_k, parsed.stop) == (0.2, 5, ("END",))


@pytest.mark.parametrize(
    "body, words",
    [
        ({"messages": [{"role": "user", "content": "a"}]}, "max_tokens"),
        ({"max_tokens": 8, "messages": [{"role": "user", "content": [{"type": "document"}]}]}, "document"),
        (
            {"max_tokens": 8, "messages": [{"role": "user", "content": "a"}], "tool_choice": {"type": "sometimes"}},
            "tool_choice",
        ),
        (
            {
                "max_tokens": 8,
                "messages": [{"role": "user", "content": "a"}],
                "thinking": {"type": "enabled", "budget_tokens": 0},
            },
            "budget_tokens",
        ),
    ],
)
def test_bad_bodies_get_one_sentence_naming_the_field(body, words):
    with pytest.raises(BadRequest) as caught:
        parse_messages_request({"model": "m", **body}, LIMITS, DEFAULTS)
    assert words in str(caught.value)


def test_the_tokens_left_countdown_leaves_the_system_prompt_for_the_last_turn():
    def parsed(left: int):
        system = f"You are an agent.\n<total_tokens>{left} tokens left</total_tokens>"
        return _parse(system=system, messages=[{"role": "user", "content": "hi"}]).messages

    first, second = parsed(190000), parsed(185000)
    assert first[0] == second[0] == {"role": "system", "content": "You are an agent."}
    assert "190000 tokens left" in first[-1]["content"] and first[-1]["role"] == "user"


def test_a_failed_tool_result_in_blocks_reaches_the_model_as_an_error():
    parsed = _parse(
        messages=[
            {"role": "user", "content": "run it"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {"c": "x"}}]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": [{"type": "text", "text": "command not found"}],
                    }
                ],
            },
        ]
    )
    assert parsed.messages[-1] == {"role": "tool", "tool_call_id": "t1", "content": "Error: command not found"}
    assert parsed.messages[1]["tool_calls"][0]["function"] == {"name": "Bash", "arguments": {"c": "x"}}


def test_a_picture_by_url_is_refused_unless_the_server_fetches_pictures():
    image = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    with pytest.raises(BadRequest) as caught:
        _parse(messages=[{"role": "user", "content": [image, {"type": "text", "text": "what is this?"}]}])
    assert "--fetch-image-urls" in str(caught.value)
