"""The tool loop's rules, shared by the window and `generate --mcp`, and a reply's calls crossing the engine's wire
as records."""

from __future__ import annotations

import json
import pickle

from app.engine.events import FinishedEvent, GenerationStats, TokenEvent
from app.engine.host.wire import EngineEvents
from app.engine.tools.calls import ToolCall
from app.engine.tools.stream import with_tool_calls
from app.replies.tool_loop import ToolRun, pending_record

TOOLS = json.dumps([{"type": "function", "function": {"name": "read_note", "parameters": {"type": "object"}}}])


def test_a_replys_calls_cross_the_wire_as_records_and_leave_its_text():
    text = 'Let me look.\n<tool_call>\n{"name": "read_note", "arguments": {"name": "monday"}}\n</tool_call>'
    events = [TokenEvent(1, 0, 5, "Let me", "target", None, 0), FinishedEvent(1, text, GenerationStats())]
    token, finished = with_tool_calls(events, "hermes", TOOLS)
    assert token == events[0]
    assert finished.text == "Let me look."
    [call] = finished.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("read_note", {"name": "monday"}) and call.id
    # The window reads them as typed records on its side of the pipe.
    crossed = pickle.loads(pickle.dumps(EngineEvents((finished,))))
    assert crossed.events[0].tool_calls == (call,)


def test_without_tools_offered_the_text_is_left_as_it_is():
    finished = FinishedEvent(1, "<tool_call>{}</tool_call>", GenerationStats())
    assert list(with_tool_calls([finished], "hermes", "")) == [finished]


def test_the_loop_ends_on_an_answer_a_repeat_or_the_step_limit():
    call = ToolCall("read_note", '{"name": "monday"}', "call_1")
    run = ToolRun(max_steps=3)
    assert run.next_step([call]) == "calls"
    run.note([pending_record(call, None)])
    assert run.next_step([ToolCall("read_note", '{ "name":"monday" }', "call_2")]) == "repeated"
    assert run.next_step([ToolCall("read_note", '{"name": "friday"}', "call_3")]) == "limit"
    assert ToolRun().next_step([]) == "answer"
