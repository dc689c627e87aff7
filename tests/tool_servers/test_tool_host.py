"""Tool servers through the mcp SDK: a real stdio server written with the same SDK (tests/mcp/tool_server.py)."""

from __future__ import annotations

import json
import sys

import pytest

from app.mcp.records import ServerSpec, openai_tools
from app.mcp.servers_file import parse_servers
from app.mcp.tool_host import MAX_RESULT_CHARS, ToolHost

DEADLINE_S = 60.0


def _spec(name: str = "notes", *flags: str) -> ServerSpec:
    return ServerSpec(name=name, command=sys.executable, args=("-m", "tests.tool_servers.tool_server", *flags))


@pytest.fixture
def host():
    hosts: list[ToolHost] = []

    def start(*specs: ServerSpec, **kwargs) -> ToolHost:
        made = ToolHost(specs, **kwargs)
        hosts.append(made)
        made.start()
        assert made.wait_started(DEADLINE_S)
        return made

    yield start
    for made in hosts:
        made.close()


def _call(host: ToolHost, name: str, arguments: dict):
    return host.call(name, arguments).result(timeout=DEADLINE_S)


def test_a_servers_tools_are_listed_for_the_model_in_openais_shape(host):
    tools = host(_spec()).tools()
    names = [tool.name for tool in tools]
    assert {"add", "read_note", "slow"} <= set(names)
    add = json.loads(openai_tools(tools))[names.index("add")]["function"]
    assert add["description"] == "Add two whole numbers."
    assert add["parameters"]["required"] == ["a", "b"]


def test_a_call_runs_on_the_server(host):
    tools_host = host(_spec())
    result = _call(tools_host, "add", {"a": 2, "b": 40})
    assert (result.text, result.is_error) == ("42", False)
    assert _call(tools_host, "read_note", {"name": "monday"}).text == "Note monday: buy milk"


def test_two_servers_with_the_same_tool_get_names_the_model_can_tell_apart(host):
    tools = host(_spec("home"), _spec("work")).tools()
    names = [tool.name for tool in tools if tool.tool == "add"]
    assert names == ["add", "work_add"]


def test_a_tool_that_fails_or_is_unknown_says_so_and_the_server_lives_on(host):
    tools_host = host(_spec())
    failed = _call(tools_host, "fails", {})
    assert failed.is_error and "the disk is full" in failed.text
    unknown = _call(tools_host, "no_such_tool", {})
    assert unknown.is_error and "no tool named" in unknown.text
    assert _call(tools_host, "add", {"a": 1, "b": 1}).text == "2"


@pytest.mark.slow
def test_a_ten_megabyte_result_is_cut_to_what_a_reply_can_use(host):
    result = _call(host(_spec()), "huge", {})
    assert result.truncated and not result.is_error
    assert len(result.text) < MAX_RESULT_CHARS + 200
    assert "10,000,000 characters" in result.text


@pytest.mark.slow
def test_a_call_that_hangs_times_out_with_a_sentence(host):
    result = _call(host(_spec(), call_timeout_s=1.0), "slow", {"seconds": 30})
    assert result.is_error and "did not finish within 1 s" in result.text


def test_stopping_a_slow_call_ends_it_and_the_server_answers_the_next(host):
    tools_host = host(_spec())
    future = tools_host.call("slow", {"seconds": 30})
    assert future.cancel() or future.done()
    assert _call(tools_host, "add", {"a": 3, "b": 4}).text == "7"


def test_a_server_that_crashes_mid_call_gets_a_sentence_and_the_others_go_on(host):
    tools_host = host(_spec("fragile"), _spec("steady"))
    crashed = _call(tools_host, "crash", {})
    assert crashed.is_error and "fragile" in crashed.text
    assert tools_host.wait_started(DEADLINE_S)
    states = {state.spec.name: state for state in tools_host.states()}
    assert states["fragile"].phase == "failed" and "fragile" in states["fragile"].problem
    assert states["steady"].phase == "ready"
    # The failed server's tools are gone, so the steady one's "add" keeps its own name from now on.
    assert [tool.name for tool in tools_host.tools() if tool.tool == "add"] == ["add"]
    assert _call(tools_host, "add", {"a": 1, "b": 2}).text == "3"


def test_a_server_that_cannot_start_says_what_it_printed(host):
    tools_host = host(_spec("db", "--die-at-start"))
    state = tools_host.states()[0]
    assert state.phase == "failed"
    assert "cannot open the database (permission denied)" in state.problem
    assert tools_host.tools() == ()


def test_a_missing_command_is_one_sentence(host):
    tools_host = host(ServerSpec(name="gone", command="/nonexistent/mcp-server"))
    assert (
        tools_host.states()[0].problem == 'Tool server "gone" could not start: /nonexistent/mcp-server was not found.'
    )


def test_a_server_that_prints_garbage_first_still_serves_or_gets_a_sentence(host):
    tools_host = host(_spec("noisy", "--garbage"))
    state = tools_host.states()[0]
    if state.phase == "ready":
        assert _call(tools_host, "add", {"a": 1, "b": 1}).text == "2"
    else:
        assert state.phase == "failed" and state.problem.startswith('Tool server "noisy"')


def test_closing_the_host_ends_its_servers_and_answers_waiting_calls(host):
    tools_host = host(_spec())
    future = tools_host.call("slow", {"seconds": 30})
    tools_host.close()
    result = future.result(timeout=DEADLINE_S)
    assert result.is_error
    assert [state.phase for state in tools_host.states()] == ["stopped"]


def test_mcp_json_as_other_apps_write_it():
    read = parse_servers(
        json.dumps(
            {
                "mcpServers": {
                    "files": {
                        "command": "npx",
                        "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
                        "env": {"DEBUG": "1"},
                    },
                    "search": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer k"}},
                    "off": {"command": "x", "disabled": True},
                    "broken": {"args": ["no command"]},
                    "both": {"command": "x", "url": "http://h/mcp"},
                    "badargs": {"command": "x", "args": "not a list"},
                }
            }
        )
    )
    assert [s.name for s in read.servers] == ["files", "search"]
    assert read.servers[0].describe() == "npx -y @modelcontextprotocol/server-filesystem /tmp"
    assert read.servers[1].transport == "http"
    assert len(read.problems) == 3 and all(p.startswith('Tool server "') for p in read.problems)


@pytest.mark.parametrize("text", ["{", "[]", '{"mcpServers": []}', '"text"'])
def test_a_file_that_is_not_a_server_list_is_one_sentence(text):
    read = parse_servers(text)
    assert read.servers == () and len(read.problems) == 1
