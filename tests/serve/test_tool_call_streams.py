"""A tool call streams as the model writes it, read by the official SDKs' own stream parsers against the real
`serve` process: a tiny model with Qwen's chat template is made to call a tool (tool_choice required, the tool's
parameters fixed by `const`, so the grammar decides every character), and each API sends the call's head first,
then its arguments in pieces, which add up to the arguments of the same reply asked for whole."""

from __future__ import annotations

import json
from pathlib import Path

import anthropic
import openai
import pytest

from app.testing.synthetic import write_tiny_model
from tests.serve.api_fixtures import DEADLINE_S, serving_process

TEMPLATE = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates" / "qwen2.5.jinja"
ARGUMENTS = {"path": "src/a.py", "old_string": "x = 1", "new_string": "x = 2"}
PARAMETERS = {
    "type": "object",
    "properties": {key: {"const": value} for key, value in ARGUMENTS.items()},
    "required": list(ARGUMENTS),
}
ASK = "Set x to 2 in src/a.py."
GREEDY = {"temperature": 0}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    model = write_tiny_model(
        tmp_path_factory.mktemp("qwen-tiny") / "qwen-tiny.gguf",
        extra_metadata=[("tokenizer.chat_template", TEMPLATE.read_text())],
    )
    with serving_process("--target", str(model)) as process:
        yield process


@pytest.fixture
def chat(served) -> openai.OpenAI:
    return openai.OpenAI(base_url=served.url + "/v1", api_key="none", timeout=DEADLINE_S, max_retries=0)


def _chat_body() -> dict:
    tool = {"type": "function", "function": {"name": "edit", "description": "Edit a file.", "parameters": PARAMETERS}}
    return {
        "model": "m",
        "messages": [{"role": "user", "content": ASK}],
        "tools": [tool],
        "tool_choice": "required",
        "max_tokens": 200,
        **GREEDY,
    }


def test_chat_completions_stream_a_calls_arguments_before_it_is_whole(chat):
    whole = chat.chat.completions.create(**_chat_body())
    call = whole.choices[0].message.tool_calls[0]
    assert whole.choices[0].finish_reason == "tool_calls"
    assert call.function.name == "edit" and json.loads(call.function.arguments) == ARGUMENTS

    chunks = list(chat.chat.completions.create(**_chat_body(), stream=True))
    frames = [(c, c.choices[0].delta.tool_calls or []) for c in chunks if c.choices]
    heads = [i for i, (_, calls) in enumerate(frames) if any(f.id for f in calls)]
    pieces = [i for i, (_, calls) in enumerate(frames) if any(f.function.arguments and not f.id for f in calls)]
    assert len(heads) == 1 and pieces and heads[0] < pieces[0]
    # The first piece went out while the call was still being written: tokens of it came in later chunks.
    later_tokens = [t for c, _ in frames[pieces[0] + 1 :] for t in (c.model_extra or {})["specchat"]["tokens"]]
    assert later_tokens and len(pieces) > 1
    joined = "".join(f.function.arguments for _, calls in frames for f in calls if f.function.arguments)
    assert joined == call.function.arguments

    with chat.chat.completions.stream(**_chat_body()) as stream:
        final = stream.get_final_completion()  # the SDK assembles the pieces
    streamed = final.choices[0].message.tool_calls[0]
    assert (streamed.function.name, streamed.function.arguments) == ("edit", call.function.arguments)


def test_anthropic_messages_stream_input_json_pieces(served):
    sdk = anthropic.Anthropic(base_url=served.url, api_key="none", timeout=DEADLINE_S, max_retries=0)
    body = {
        "model": "m",
        "max_tokens": 200,
        "messages": [{"role": "user", "content": ASK}],
        "tools": [{"name": "edit", "description": "Edit a file.", "input_schema": PARAMETERS}],
        "tool_choice": {"type": "any"},
        "extra_body": GREEDY,
    }
    whole = sdk.messages.create(**body)
    use = next(block for block in whole.content if block.type == "tool_use")
    assert whole.stop_reason == "tool_use" and use.input == ARGUMENTS

    with sdk.messages.stream(**body) as stream:
        events = list(stream)
        final = stream.get_final_message()
    kinds = [e.type for e in events]
    pieces = [e for e in events if e.type == "input_json"]
    start = kinds.index("content_block_start")
    assert events[start].content_block.type == "tool_use" and events[start].content_block.input == {}
    assert len(pieces) > 1 and start < kinds.index("input_json") < kinds.index("content_block_stop")
    assert pieces[0].snapshot != ARGUMENTS  # the first piece came before the call was whole
    streamed = next(block for block in final.content if block.type == "tool_use")
    assert (streamed.name, streamed.input, final.stop_reason) == ("edit", ARGUMENTS, "tool_use")


def test_responses_stream_function_call_arguments_deltas(chat):
    tool = {"type": "function", "name": "edit", "description": "Edit a file.", "parameters": PARAMETERS}
    body = {"model": "m", "input": ASK, "tools": [tool], "tool_choice": "required", "max_output_tokens": 200}
    whole = chat.responses.create(**body, extra_body=GREEDY)
    call = next(item for item in whole.output if item.type == "function_call")
    assert json.loads(call.arguments) == ARGUMENTS

    with chat.responses.stream(**body, extra_body=GREEDY) as stream:
        events = list(stream)
        final = stream.get_final_response()
    kinds = [e.type for e in events]
    deltas = [e.delta for e in events if e.type == "response.function_call_arguments.delta"]
    added = next(e for e in events if e.type == "response.output_item.added" and e.item.type == "function_call")
    assert added.item.arguments == "" and kinds.index("response.output_item.added") < kinds.index(
        "response.function_call_arguments.delta"
    )
    assert len(deltas) > 1 and "".join(deltas) == call.arguments
    done = next(e for e in events if e.type == "response.function_call_arguments.done")
    assert done.arguments == call.arguments
    streamed = next(item for item in final.output if item.type == "function_call")
    assert (streamed.name, streamed.arguments, streamed.status) == ("edit", call.arguments, "completed")
