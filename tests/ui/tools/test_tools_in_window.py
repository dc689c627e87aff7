"""MCP tools in the window, against a real stdio tool server (tests/tool_servers/tool_server.py, written with the `mcp`
package) and the scripted engine, which replies with a call in Qwen's `<tool_call>` format and, once a tool's result
is in the chat, with an answer. The model's call shows the permission prompt; Allow runs it, its result is shown and
reaches the model; Deny sends the refusal; Stop during a slow tool ends the loop; a crashing server gets its sentence.
"""

from __future__ import annotations

import json
import sys

import pytest

from app.mcp.records import find_tool
from app.replies.tool_loop import REFUSED, STOPPED
from tests.support.mcp_files import ROOT, write_mcp_file
from tests.ui.window_helpers import choose_pair, click_link, send_and_wait

DEADLINE_MS = 60000


def _call(name: str, arguments: dict) -> str:
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


@pytest.fixture
def tool_window(mcp_window):
    """The test server's window (conftest's mcp_window) with tools on in its chat."""
    mcp_window.update_chat_settings(tools=True)  # tools are off in a chat until it turns them on
    return mcp_window


def _ask(qtbot, window, question: str) -> int:
    """Send `question`; returns the id of the reply that called, once its prompt is shown."""
    reply_id = send_and_wait(qtbot, window, question)
    qtbot.waitUntil(lambda: "Allow once" in window.chat_view.toPlainText(), timeout=DEADLINE_MS)
    return reply_id


def _answer(qtbot, window, reply_id: int, label: str, answer: str) -> None:
    view = window.chat_view
    click_link(qtbot, view, label, view.action_href("toolanswer", f"{reply_id}.0.{answer}"))


def _allowed(qtbot, window, fake_engine, question: str) -> tuple[int, str]:
    """Send `question`, allow its call once and wait for the answer after it: (the calling reply's id, what the
    model was sent as the call's result)."""
    reply_id = _ask(qtbot, window, question)
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=DEADLINE_MS):
        _answer(qtbot, window, reply_id, "Allow once", "once")
    return reply_id, fake_engine.requests[-1][-1]["content"]


@pytest.mark.slow
def test_allow_runs_the_call_and_its_result_reaches_the_model(tool_window, qtbot, fake_engine):
    fake_engine.reply = _call("read_note", {"name": "monday"})
    fake_engine.after_tool_reply = "Your monday note says to buy milk."
    window, view = tool_window, tool_window.chat_view
    reply_id = _ask(qtbot, window, "What does my monday note say?")
    # The tools were offered to the model, and before anything runs the prompt names the tool, server and arguments.
    assert "read_note" in fake_engine.configs[0]["tools"]
    shown = view.toPlainText()
    assert 'The model wants to run the tool read_note from the server "notes"' in shown
    assert '"name": "monday"' in shown and "<tool_call>" not in shown
    assert "Always allow this tool in this chat" in shown and "Deny" in shown
    assert window.composer.is_busy()  # the button is Stop while a call waits or runs
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=DEADLINE_MS) as final:
        _answer(qtbot, window, reply_id, "Allow once", "once")
    assert final.args[0] != reply_id
    # The result went back to the model as its template wants it, and the model's answer followed.
    messages = fake_engine.requests[-1]
    assert messages[-2]["tool_calls"][0]["function"] == {"name": "read_note", "arguments": {"name": "monday"}}
    assert messages[-1] == {
        "role": "tool",
        "tool_call_id": messages[-2]["tool_calls"][0]["id"],
        "name": "read_note",
        "content": "Note monday: buy milk",
    }
    # The call's block shows what happened; opened, its arguments and result.
    qtbot.waitUntil(lambda: "Your monday note says" in view.toPlainText(), timeout=DEADLINE_MS)
    assert "▸ Tool read_note (notes) · returned in" in view.toPlainText()
    click_link(qtbot, view, "▸ Tool read_note", view.action_href("toolcall", f"{reply_id}.0"))
    qtbot.waitUntil(lambda: "Note monday: buy milk" in view.toPlainText(), timeout=5000)
    # Stored with the chat: opened again (as after a restart) it shows the same, and the prompt holds the call.
    stored = window.store.get_message(reply_id)
    assert (stored.tool_calls[0].answer, stored.tool_calls[0].result) == ("once", "Note monday: buy milk")
    window.conversation.open_chat(stored.chat_id)
    assert "Tool read_note (notes) · returned in" in view.toPlainText()
    assert "Note monday: buy milk" in view.toPlainText()  # the block stays as it was opened
    assert window.conversation.prompt_messages("")[-2]["content"] == "Note monday: buy milk"


@pytest.mark.slow
def test_a_repeated_call_is_not_run_again_and_the_model_answers_from_the_first(tool_window, qtbot, fake_engine):
    """Small models call the same tool again once its result is in: the repeat runs nothing, its reply is left out
    of what the model reads (as `generate --mcp` does) and the next reply is asked without tools, so it answers."""
    fake_engine.reply = fake_engine.after_tool_reply = _call("read_note", {"name": "monday"})
    window, view = tool_window, tool_window.chat_view
    reply_id = _ask(qtbot, window, "What does my monday note say?")
    requests = len(fake_engine.requests)
    _answer(qtbot, window, reply_id, "Allow once", "once")
    qtbot.waitUntil(
        lambda: (
            len(fake_engine.requests) == requests + 2
            and not window.tools.turns.is_busy()
            and not window.conversation.is_busy()
        ),
        timeout=DEADLINE_MS,
    )
    assert "read_note" in fake_engine.configs[-2]["tools"] and not fake_engine.configs[-1]["tools"]
    # The last request holds the first call and its result only, and nothing was asked about twice.
    last = fake_engine.requests[-1]
    assert [m["content"] for m in last if m["role"] == "tool"] == ["Note monday: buy milk"]
    assert last[-1]["role"] == "tool" and view.toPlainText().count("Allow once") == 0
    assert "asked again: not run, the model answers from the earlier result" in view.toPlainText()


@pytest.mark.slow
def test_deny_sends_the_model_a_refusal_and_always_stops_asking(tool_window, qtbot, fake_engine):
    fake_engine.reply = _call("add", {"a": 2, "b": 3})
    fake_engine.after_tool_reply = "I was not allowed to add them."
    window, view = tool_window, tool_window.chat_view
    reply_id = _ask(qtbot, window, "Add 2 and 3 with the tool.")
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=DEADLINE_MS):
        _answer(qtbot, window, reply_id, "Deny", "denied")
    assert fake_engine.requests[-1][-1]["content"] == REFUSED
    qtbot.waitUntil(lambda: "I was not allowed" in view.toPlainText(), timeout=DEADLINE_MS)
    assert "▸ Tool add (notes) · denied" in view.toPlainText()
    # "Always" in this chat: the next call of that tool runs without a prompt (and is still shown).
    fake_engine.after_tool_reply = "It is 5."
    reply_id = _ask(qtbot, window, "Try again.")
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=DEADLINE_MS):
        _answer(qtbot, window, reply_id, "Always allow this tool in this chat", "always")
    assert fake_engine.requests[-1][-1]["content"] == "5"
    requests = len(fake_engine.requests)
    first_id = send_and_wait(qtbot, window, "Once more.")
    qtbot.waitUntil(lambda: len(fake_engine.requests) == requests + 2, timeout=DEADLINE_MS)
    assert fake_engine.requests[-1][-1]["content"] == "5"
    assert window.store.get_message(first_id).tool_calls[0].answer == "always"


@pytest.mark.slow
def test_stop_during_a_slow_tool_ends_the_loop(tool_window, qtbot, fake_engine):
    fake_engine.reply = _call("slow", {"seconds": 30})
    fake_engine.after_tool_reply = "Done."
    window, view = tool_window, tool_window.chat_view
    reply_id = _ask(qtbot, window, "Wait for me.")
    _answer(qtbot, window, reply_id, "Allow once", "once")
    qtbot.waitUntil(lambda: "running…" in view.toPlainText(), timeout=DEADLINE_MS)
    window.composer.button.click()
    qtbot.waitUntil(lambda: "▸ Tool slow (notes) · stopped" in view.toPlainText(), timeout=5000)
    assert not window.composer.is_busy()
    assert len(fake_engine.requests) == 1  # no reply was asked for after the stop...
    # ...and the chat goes on: the next question's prompt holds the stopped call's result.
    fake_engine.reply = "Sure."
    send_and_wait(qtbot, window, "Never mind.")
    assert len(fake_engine.requests) == 2
    assert [m["content"] for m in fake_engine.requests[-1] if m["role"] == "tool"] == [STOPPED]


@pytest.mark.slow
def test_a_crashing_tool_server_gets_its_sentence_and_the_chat_stays_usable(tool_window, qtbot, fake_engine):
    fake_engine.reply = _call("crash", {})
    fake_engine.after_tool_reply = "The tool server is gone."
    window, view = tool_window, tool_window.chat_view
    _, sentence = _allowed(qtbot, window, fake_engine, "Crash it.")
    assert sentence.startswith('Tool server "notes" stopped')
    qtbot.waitUntil(lambda: "▸ Tool crash (notes) · failed" in view.toPlainText(), timeout=DEADLINE_MS)
    assert [state.phase for state in window.tools.servers.states()] == ["failed"]
    # The chat goes on, without the gone server's tools.
    fake_engine.reply = "Still here."
    send_and_wait(qtbot, window, "Hello?")
    assert fake_engine.configs[-1]["tools"] == ""
    assert "Still here." in view.toPlainText()


@pytest.mark.slow
def test_a_ten_megabyte_result_is_cut_for_the_model_and_for_the_eye(tool_window, qtbot, fake_engine):
    fake_engine.reply = _call("huge", {})
    fake_engine.after_tool_reply = "That was long."
    window, view = tool_window, tool_window.chat_view
    reply_id, sent = _allowed(qtbot, window, fake_engine, "Read it all.")
    assert len(sent) < 101_000 and "10,000,000 characters" in sent
    click_link(qtbot, view, "▸ Tool huge", view.action_href("toolcall", f"{reply_id}.0"))
    qtbot.waitUntil(lambda: "Showing the first 4,000 of" in view.toPlainText(), timeout=5000)
    assert "That was long." in view.toPlainText()


@pytest.fixture
def two_server_window(make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path):
    """Servers "first" and "second" with the same tools: "read_note" is first's while first runs."""
    mcp = write_mcp_file(tmp_path / "mcp.json", ("first", "second"))
    window = make_window(engine_factory=fake_engine, mcp_file=str(mcp))
    qtbot.waitUntil(lambda: [s.phase for s in window.tools.servers.states()] == ["ready", "ready"], timeout=DEADLINE_MS)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    window.update_chat_settings(tools=True)  # tools are off in a chat until it turns them on
    return window


def _crash_first(qtbot, window) -> None:
    """The first server dies: "read_note" is then the second server's tool."""
    servers = window.tools.servers
    servers.call_tool(find_tool(servers.tools(), "crash"), {}).result(timeout=DEADLINE_MS / 1000)
    qtbot.waitUntil(lambda: servers.states()[0].phase == "failed", timeout=DEADLINE_MS)
    assert find_tool(servers.tools(), "read_note").server == "second"


def test_always_allow_is_bound_to_the_tool_not_its_name(two_server_window, qtbot, fake_engine):
    """Issue 44 class 4: "always" for first's read_note; first fails and second's read_note takes the name: it is
    asked about, never run under the first one's grant."""
    fake_engine.reply = _call("read_note", {"name": "monday"})
    fake_engine.after_tool_reply = "Milk."
    window, view = two_server_window, two_server_window.chat_view
    reply_id = _ask(qtbot, window, "What does my monday note say?")
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=DEADLINE_MS):
        _answer(qtbot, window, reply_id, "Always allow this tool in this chat", "always")
    assert window.store.get_message(reply_id).tool_calls[0].server == "first"
    _crash_first(qtbot, window)
    reply_id = _ask(qtbot, window, "And again?")
    assert 'The model wants to run the tool read_note from the server "second"' in view.toPlainText()
    assert window.store.get_message(reply_id).tool_calls[0].answer == ""  # nothing ran unasked


def test_the_call_that_runs_is_the_tool_the_person_was_asked_about(two_server_window, qtbot, fake_engine):
    """The tool is resolved once, when the prompt is shown: its server dies before the click, so Allow runs
    nothing and the prompt asks again, now about the second server's tool; that one runs once allowed."""
    fake_engine.reply = _call("read_note", {"name": "monday"})
    fake_engine.after_tool_reply = "Milk."
    window, view = two_server_window, two_server_window.chat_view
    reply_id = _ask(qtbot, window, "What does my monday note say?")
    assert 'from the server "first"' in view.toPlainText()
    _crash_first(qtbot, window)
    _answer(qtbot, window, reply_id, "Allow once", "once")
    qtbot.waitUntil(lambda: 'from the server "second"' in view.toPlainText(), timeout=DEADLINE_MS)
    assert "Allow once" in view.toPlainText() and len(fake_engine.requests) == 1
    with qtbot.waitSignal(window.conversation.sig_reply_finished, timeout=DEADLINE_MS):
        _answer(qtbot, window, reply_id, "Allow once", "once")
    [call] = window.store.get_message(reply_id).tool_calls
    assert (call.server, call.answer, call.result) == ("second", "once", "Note monday: buy milk")


def test_a_hostile_tool_name_is_shown_as_it_is(make_window, qtbot, fake_engine, model_folder, tiny_models, tmp_path):
    """Issue 44 class 3 in the window: a tool name holding escape sequences, a bidi override and a zero-width
    space is shown with each of them escaped, so the prompt cannot be reordered or hide what runs."""
    from app.common.text import printable
    from tests.tool_servers.hostile_server import HOSTILE

    mcp = tmp_path / "mcp.json"
    mcp.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "notes\u202e": {
                        "command": sys.executable,
                        "args": ["-m", "tests.tool_servers.hostile_server"],
                        "cwd": str(ROOT),
                    }
                }
            }
        )
    )
    window = make_window(engine_factory=fake_engine, mcp_file=str(mcp))
    qtbot.waitUntil(lambda: bool(window.tools.servers.tools()), timeout=DEADLINE_MS)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, None)
    window.update_chat_settings(tools=True)
    fake_engine.reply = _call(window.tools.servers.tools()[0].name, {"name": "monday"})
    _ask(qtbot, window, "Read my note.")
    shown = window.chat_view.toPlainText()
    assert f'run the tool {printable(HOSTILE, name=True)} from the server "notes\\u202e"' in shown
    assert not [c for c in ("\x1b", "\u202e", "\u200b", "\x08") if c in shown]


@pytest.mark.real_models
def test_the_real_model_calls_a_tool_in_the_window_and_answers_from_its_result(
    make_window, qtbot, real_models, tmp_path
):
    mcp = write_mcp_file(tmp_path / "mcp.json")
    window = make_window(folders=[str(real_models["target"].parent)], mcp_file=str(mcp), context_size=4096)
    qtbot.waitUntil(lambda: bool(window.tools.servers.tools()), timeout=DEADLINE_MS)
    window.choose_target(str(real_models["target"]))
    qtbot.waitUntil(lambda: not window.drafts.is_checking(), timeout=120000)
    qtbot.waitUntil(window.models_ready, timeout=300000)
    window.update_chat_settings(
        tools=True,
        max_tokens=120,
        system_prompt="You are a helpful assistant. When a tool response comes, answer the user's question from it.",
    )
    reply_id = send_and_wait(qtbot, window, "What does my note named monday say?", timeout=600000)
    qtbot.waitUntil(lambda: "Allow once" in window.chat_view.toPlainText(), timeout=DEADLINE_MS)
    [call] = window.store.get_message(reply_id).tool_calls
    assert (call.name, json.loads(call.arguments)) == ("read_note", {"name": "monday"})
    finished: list[int] = []
    called: list[int] = []
    window.conversation.sig_reply_finished.connect(finished.append)
    window.conversation.sig_tool_calls.connect(lambda message_id, _calls: called.append(message_id))
    _answer(qtbot, window, reply_id, "Allow once", "once")
    # A reply that calls nothing ends the loop (one that repeats the call is answered by asking without tools).
    qtbot.waitUntil(lambda: bool(finished) and finished[-1] not in called, timeout=900000)
    assert window.store.get_message(reply_id).tool_calls[0].result == "Note monday: buy milk"
    last = window.store.get_message(finished[-1])
    assert "milk" in last.content.lower(), (last.stats, last.tokens)
