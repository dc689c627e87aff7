"""The bounds on what a JSON schema may expand to (app.engine.schema_limits), as the engine applies them: a schema
beyond them is refused with one sentence when the reply is asked for, before llama.cpp reads any grammar, and a
schema within them (a string of up to 1,000 characters) still decodes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from app.engine.schema_limits import MAX_GRAMMAR_NESTING, grammar_nesting, grammar_problem, schema_problem

ROOT = Path(__file__).resolve().parents[2]


def test_the_problem_names_the_place_in_the_schema():
    schema = {"type": "object", "properties": {"maxLength": {"type": "string", "maxLength": 5000}}}
    assert schema_problem(schema, "schema") == (
        "schema.properties.maxLength.maxLength is 5000; a grammar counts to at "
        "most 1000 (leave it out for any length, or lower it)."
    )
    nested = {"anyOf": [{"type": "array", "items": {"type": "string", "pattern": "^x{2000}$"}}]}
    assert schema_problem(nested, "s").startswith("s.anyOf[0].items.pattern {2000} is 2000;")


def test_properties_are_bounded_per_object_and_in_all():
    def obj(n: int) -> dict:
        return {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(n)}}

    assert "has 129 properties" in schema_problem(obj(129), "s")
    many = {"type": "object", "properties": {f"o{j}": obj(125) for j in range(8)}}
    assert "more than 1000" in schema_problem(many, "s")
    assert schema_problem({"type": "object", "properties": {f"o{j}": obj(125) for j in range(7)}}, "s") is None


def test_a_schema_nested_deeper_than_a_request_may_is_refused():
    schema: dict = {"type": "string"}
    for _ in range(45):
        schema = {"type": "array", "items": schema}
    assert schema_problem(schema, "s").endswith("nests deeper than 40 levels.")


def test_data_inside_a_schema_is_not_read_as_a_schema():
    # A property named "minItems" and enum values that look like schemas are names and data.
    schema = {
        "type": "object",
        "properties": {"minItems": {"type": "integer"}},
        "enum": [{"maxLength": 10**9}],
        "default": {"maxItems": "many"},
    }
    assert schema_problem(schema) is None


def test_grammar_nesting_counts_groups_only():
    assert grammar_nesting('root ::= "(((" [()] ( "a" ( "b" )? )?  # ((((\n') == 2
    assert grammar_problem("root ::= " + '("a" ' * (MAX_GRAMMAR_NESTING + 1) + ")?" * (MAX_GRAMMAR_NESTING + 1))


def _engine_script(schema: dict) -> str:
    return textwrap.dedent(f"""
        import json, sys
        from app.engine.config import GenerationConfig, LoadSettings
        from app.engine.errors import GrammarError
        from app.engine.local.engine import SpecEngine
        engine = SpecEngine(LoadSettings(n_ctx=512, n_threads=1))
        engine.load_target(sys.argv[1])
        config = GenerationConfig(max_tokens=6, history=False, speculative=False,
                                  json_schema=json.dumps({schema!r}))
        try:
            events = engine.chat([{{"role": "user", "content": "JSON please"}}], config)
        except GrammarError as exc:
            print("refused:", exc)
        else:
            print("decoded:", [e for e in events][-1].text)
        """)


def _engine(tiny_models, schema: dict) -> str:
    """What the engine does with `schema`, in a process of its own: a crash fails the test, not pytest."""
    done = subprocess.run(
        [sys.executable, "-c", _engine_script(schema), str(tiny_models.target)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    return done.stdout.strip()


def test_the_engine_refuses_a_long_string_before_llama_cpp_reads_it(tiny_models):
    said = _engine(tiny_models, {"type": "string", "maxLength": 100000})
    assert (
        said == "refused: json_schema.maxLength is 100000; a grammar counts to at most 1000 (leave it out "
        "for any length, or lower it)."
    )
    assert _engine(tiny_models, {"type": "string", "maxLength": 1000}).startswith('decoded: "')
