"""`specchat-cli generate --tools FILE.json` prints the reply's calls (under "tool_calls" with --json), and
`--json-schema FILE` decodes under the schema; bad files get one sentence and exit status 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}


def _generate(*args) -> subprocess.CompletedProcess:
    return run_cli("generate", *args, "--threads", "1", timeout=300)


def test_json_schema_decodes_under_the_schema(tiny_models, tmp_path):
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    done = _generate(
        "--target",
        tiny_models.target,
        "--chat",
        "JSON please",
        "--max-tokens",
        40,
        "--json-schema",
        tmp_path / "schema.json",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    jsonschema.validate(json.loads(json.loads(done.stdout)["text"]), schema)


@pytest.mark.real_models
def test_tools_print_the_calls_of_the_real_model(real_models, tmp_path):
    (tmp_path / "tools.json").write_text(json.dumps([WEATHER]))
    args = (
        "--target",
        real_models["target"],
        "--chat",
        "What is the weather in Paris?",
        "--max-tokens",
        80,
        "--tools",
        tmp_path / "tools.json",
        "--no-history",
    )
    printed = _generate(*args)
    assert printed.returncode == 0, printed.stderr
    assert 'tool call: get_weather {"city": "Paris"}' in printed.stdout
    out = json.loads(_generate(*args, "--json").stdout)
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in out["tool_calls"]] == [
        ("get_weather", {"city": "Paris"})
    ]


@pytest.mark.parametrize(
    "content,message", [("{not json", "not valid JSON"), ('[{"type": "function", "function": {}}]', "name must be")]
)
def test_a_bad_tools_file_gets_one_sentence(tiny_models, tmp_path, content, message):
    (tmp_path / "tools.json").write_text(content)
    done = _generate("--target", tiny_models.target, "--chat", "hi", "--tools", tmp_path / "tools.json")
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
