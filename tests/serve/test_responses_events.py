"""A reply's thinking, text and calls (as a Qwen-style model writes them) turned into Responses events, each one
read by the `openai` SDK's own event types: a custom tool's call goes back as custom_tool_call with its plain-text
input, a namespaced function's with its namespace, thinking as a reasoning item before the answer."""

from __future__ import annotations

import json

import pydantic
from openai.types.responses import ResponseStreamEvent

from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent, GenerationStats, TokenEvent
from app.serve.replies import ReplyShaper
from app.serve.requests import ApiLimits
from app.serve.responses.replies import ResponseEvents
from app.serve.responses.requests import parse_responses_request

EVENTS = pydantic.TypeAdapter(ResponseStreamEvent)
PATCH = "*** Begin Patch\n*** Update File: a.py\n-x = 1\n+x = 2\n*** End Patch"
TOOLS = [
    {"type": "custom", "name": "apply_patch", "description": "Edit files."},
    {
        "type": "namespace",
        "name": "mcp__files",
        "description": "Files.",
        "tools": [{"type": "function", "name": "list_files", "parameters": {"type": "object", "properties": {}}}],
    },
    {"type": "web_search"},
]


def _reply(tokens: list[tuple[str, str]]) -> list[dict]:
    request = parse_responses_request({"input": "Fix a.py", "tools": TOOLS}, ApiLimits(), GenerationConfig())
    shaper = ReplyShaper(request.chat, model="m", prompt_tokens=10, tool_format="hermes")
    events = ResponseEvents(request, shaper)
    out = events.start()
    for i, (part, text) in enumerate(tokens):
        token = TokenEvent(1, i, i, text, "target", part=part)  # type: ignore[arg-type]
        out += events.on_chunks(shaper.chunks(shaper.on_token(token)))
    out += events.on_chunks(shaper.chunks(shaper.flush(), last=True))
    stats = GenerationStats(tokens=len(tokens), stop_reason="eos", prompt_cached=4, reasoning_tokens=1)
    return out + events.finish(FinishedEvent(1, "", stats))


def test_calls_go_back_as_the_tools_expect_and_every_event_is_the_sdks():
    patch = json.dumps({"name": "apply_patch", "arguments": {"input": PATCH}})
    listing = json.dumps({"name": "list_files", "arguments": {}})
    events = _reply(
        [
            ("reasoning", "I will patch it."),
            ("answer", f"<tool_call>\n{patch}\n</tool_call>\n"),
            ("answer", f"<tool_call>\n{listing}\n</tool_call>"),
        ]
    )
    typed = [EVENTS.validate_python(e) for e in events]  # raises on any event the SDK does not know
    assert [e.sequence_number for e in typed] == list(range(len(typed)))
    final = typed[-1]
    assert final.type == "response.completed"
    reasoning, custom, function = final.response.output
    assert reasoning.type == "reasoning" and reasoning.content[0].text == "I will patch it."
    assert custom.type == "custom_tool_call" and custom.input == PATCH and custom.name == "apply_patch"
    assert function.type == "function_call" and function.name == "list_files"
    assert events[-1]["response"]["output"][2]["namespace"] == "mcp__files"
    deltas = [e.delta for e in typed if e.type == "response.custom_tool_call_input.delta"]
    assert deltas == [PATCH]
    usage = final.response.usage
    assert (usage.input_tokens, usage.input_tokens_details.cached_tokens) == (10, 4)
    assert usage.output_tokens_details.reasoning_tokens == 1


def test_a_custom_call_in_the_history_reaches_the_model_as_its_input():
    history = [
        {"type": "message", "role": "user", "content": "Fix a.py"},
        {"type": "reasoning", "summary": [{"type": "summary_text", "text": "A patch will do."}]},
        {"type": "custom_tool_call", "call_id": "c1", "name": "apply_patch", "input": PATCH},
        {"type": "custom_tool_call_output", "call_id": "c1", "output": "Success."},
    ]
    request = parse_responses_request({"input": history, "tools": TOOLS}, ApiLimits(), GenerationConfig())
    user, assistant, result = request.chat.messages
    assert assistant["reasoning_content"] == "A patch will do."
    assert assistant["tool_calls"][0]["function"] == {"name": "apply_patch", "arguments": {"input": PATCH}}
    assert result == {"role": "tool", "tool_call_id": "c1", "content": "Success."}
    offered = [t["function"]["name"] for t in request.chat.tools.offered]
    assert offered == ["apply_patch", "list_files"]  # web_search is not the model's to call


def test_a_call_written_a_character_at_a_time_streams_its_input_and_ends_whole():
    patch = json.dumps({"name": "apply_patch", "arguments": {"input": PATCH}})
    listing = json.dumps({"name": "list_files", "arguments": {"path": "src"}})
    text = f"<tool_call>\n{patch}\n</tool_call>\n<tool_call>\n{listing}\n</tool_call>"
    typed = [EVENTS.validate_python(e) for e in _reply([("answer", char) for char in text])]
    kinds = [e.type for e in typed]
    inputs = [e.delta for e in typed if e.type == "response.custom_tool_call_input.delta"]
    assert len(inputs) > 5 and "".join(inputs) == PATCH
    # The patch's item is done before the next call's item is added: each call is closed as soon as it is whole.
    assert kinds.index("response.custom_tool_call_input.done") < kinds.index("response.function_call_arguments.delta")
    arguments = [e.delta for e in typed if e.type == "response.function_call_arguments.delta"]
    done = next(e for e in typed if e.type == "response.function_call_arguments.done")
    assert len(arguments) > 5 and "".join(arguments) == done.arguments == '{"path": "src"}'
    custom, function = typed[-1].response.output
    assert (custom.input, custom.status, function.status) == (PATCH, "completed", "completed")
