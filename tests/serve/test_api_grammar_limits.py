"""A schema that would expand to a grammar llama.cpp cannot survive (a string's maxLength of 100,000 nests 100,000
groups, and its parser dies of a stack overflow; larger ones take gigabytes before that) gets a 400 naming the field,
from the real `serve` run as its own process, so that a crash fails the test instead of ending pytest; the server
then answers the next request. `generate --json-schema` refuses the same schema with a sentence and exit status 2."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.serve.api_fixtures import DEADLINE_S, chat_body, client
from tests.support.processes import cli_command, run_cli

ROOT = Path(__file__).resolve().parents[2]
LONG_STRING = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 100000}}}
# Each would crash the server or grow it to gigabytes; each names where in the request it lies.
HOSTILE = [
    (LONG_STRING, "response_format.json_schema.schema.properties.text.maxLength"),
    ({"type": "string", "maxLength": 10**12}, "response_format.json_schema.schema.maxLength"),
    (
        {"type": "array", "items": {"type": "integer"}, "minItems": 100000},
        "response_format.json_schema.schema.minItems",
    ),
    ({"type": "string", "pattern": "^a{0,100000}$"}, "response_format.json_schema.schema.pattern"),
    ({"enum": list(range(5000))}, "response_format.json_schema.schema.enum"),
    ({"type": "string", "maxLength": True}, "response_format.json_schema.schema.maxLength"),
]


@pytest.fixture(scope="module")
def serve_process(tiny_models):
    """`specchat-cli serve` with the tiny target on a free port: (its base URL, the process)."""
    process = subprocess.Popen(
        cli_command("serve", "--target", str(tiny_models.target), "--port", "0", "--threads", "1"),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = process.stderr.readline()
        found = re.search(r"at (http://127\.0\.0\.1:\d+)/v1", first)
        assert found, first
        yield found.group(1), process
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(DEADLINE_S)


def _post(url: str, body: dict):
    with client() as http:
        return http.post(f"{url}/v1/chat/completions", json=body)


def _answers(url: str, process) -> None:
    assert process.poll() is None, f"serve ended with {process.returncode}"
    answer = _post(url, chat_body("hi", 4))
    assert answer.status_code == 200 and answer.json()["choices"][0]["message"]["content"]


def _refused(response, field: str) -> str:
    assert response.status_code == 400, response.text
    message = response.json()["error"]["message"]
    assert message.startswith(field) and message.endswith(".") and "\n" not in message, message
    return message


@pytest.mark.parametrize("schema,field", HOSTILE)
def test_a_schema_beyond_the_grammar_bounds_is_a_400_naming_the_field(serve_process, schema, field):
    url, process = serve_process
    for stream in (False, True):
        body = chat_body(
            "JSON please",
            8,
            stream=stream,
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
        )
        _refused(_post(url, body), field)
    _answers(url, process)


def test_a_forced_tool_call_names_the_tools_parameters(serve_process):
    url, process = serve_process
    tool = {"type": "function", "function": {"name": "write", "parameters": LONG_STRING}}
    body = chat_body(
        "write", 8, tools=[{"type": "function", "function": {"name": "other"}}, tool], tool_choice="required"
    )
    _refused(_post(url, body), "tools[1].function.parameters.properties.text.maxLength")
    _answers(url, process)


def test_a_ref_cycle_is_refused_before_the_stream_starts(serve_process):
    """A grammar llama.cpp cannot read (a cycle of $refs is left recursion) is a 400 with a sentence, streamed too:
    the grammar is built when the reply is asked for, before its first event."""
    url, process = serve_process
    cycle = {
        "type": "object",
        "properties": {"x": {"$ref": "#/definitions/a"}},
        "definitions": {"a": {"$ref": "#/definitions/b"}, "b": {"$ref": "#/definitions/a"}},
    }
    for stream in (False, True):
        body = chat_body(
            "JSON please",
            8,
            stream=stream,
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": cycle}},
        )
        response = _post(url, body)
        assert response.status_code == 400, response.text
        assert response.json()["error"]["message"] == "llama.cpp could not read the grammar for this request."
    _answers(url, process)


def test_a_schema_within_the_bounds_is_decoded(serve_process):
    url, process = serve_process
    schema = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 1000}}, "required": ["text"]}
    body = chat_body(
        "JSON please", 12, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
    )
    answer = _post(url, body)
    assert answer.status_code == 200, answer.text
    assert answer.json()["choices"][0]["message"]["content"].startswith("{")


def test_generate_refuses_the_same_schema_with_a_sentence(tiny_models, tmp_path):
    (tmp_path / "schema.json").write_text(json.dumps(LONG_STRING))
    done = run_cli(
        "generate",
        "--target",
        str(tiny_models.target),
        "--chat",
        "JSON please",
        "--max-tokens",
        "8",
        "--threads",
        "1",
        "--json-schema",
        str(tmp_path / "schema.json"),
        timeout=300,
    )
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "schema.properties.text.maxLength is 100000" in done.stderr and "Traceback" not in done.stderr
