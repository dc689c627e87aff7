"""Speculation stays exact under a grammar: greedy output with the draft model and with n-gram drafts equals
constrained plain greedy output, on the tiny synthetic models and (real_models) on the real 1.5B with 5 schemas,
whose output validates."""

from __future__ import annotations

import json

import jsonschema
import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.errors import GrammarError
from app.engine.events import FinishedEvent
from app.engine.local.engine import SpecEngine
from tests.serve.test_tools_openai_sdk import QUESTIONS, SCHEMAS as REAL_SCHEMAS
from tests.support.engines import tiny_pair_engine

SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}}, "required": ["a", "b"]},
    {
        "type": "object",
        "properties": {
            "ok": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}},
        },
        "required": ["ok", "tags"],
    },
    {"type": "object"},
]


@pytest.fixture(scope="module")
def engine(tiny_models):
    engine = tiny_pair_engine(tiny_models, n_ctx=2048)
    yield engine
    engine.close()


def _reply(engine, schema: dict, **speculation) -> FinishedEvent:
    config = GenerationConfig(max_tokens=40, history=False, json_schema=json.dumps(schema), **speculation)
    events = list(engine.chat([{"role": "user", "content": "Answer in JSON."}], config))
    return next(e for e in events if isinstance(e, FinishedEvent))


@pytest.mark.parametrize("schema", SCHEMAS, ids=["object", "enum-array", "any-object"])
def test_speculative_greedy_equals_plain_greedy_under_a_schema(engine, schema):
    plain = _reply(engine, schema, speculative=False)
    unconstrained = next(
        e
        for e in engine.chat(
            [{"role": "user", "content": "Answer in JSON."}],
            GenerationConfig(max_tokens=40, history=False, speculative=False),
        )
        if isinstance(e, FinishedEvent)
    )
    assert plain.text.startswith("{") and plain.text != unconstrained.text  # the grammar is what shaped it
    with_model = _reply(engine, schema, drafter="model", draft_max=3)
    with_ngram = _reply(engine, schema, drafter="ngram", draft_max=3)
    assert with_model.stats.drafted > 0 and with_ngram.stats.drafted > 0
    assert with_model.text == plain.text
    assert with_ngram.text == plain.text


def test_a_schema_that_cannot_be_a_grammar_is_refused_with_a_sentence(engine):
    with pytest.raises(GrammarError):
        _reply(engine, {"type": "object", "properties": {"a": {"$ref": "#/nowhere"}}})


@pytest.fixture(scope="module")
def real_engine(real_models):
    # A fixed thread count: on Auto the thread governor changes it with the machine's load mid-reply, and a
    # different count sums in another order, which can flip a near-tie between plain and speculative decoding.
    engine = SpecEngine(LoadSettings(n_ctx=2048, n_threads=2))
    engine.load_target(real_models["target"])
    engine.load_draft(real_models["draft"])
    yield engine
    engine.close()


@pytest.mark.parametrize("index", range(len(REAL_SCHEMAS)))
@pytest.mark.real_models
def test_speculation_is_lossless_under_each_schema_on_the_real_models(real_engine, index):
    engine = real_engine
    messages = [{"role": "user", "content": QUESTIONS[index]}]

    def run(**speculation) -> str:
        config = GenerationConfig(
            max_tokens=120, history=False, json_schema=json.dumps(REAL_SCHEMAS[index]), **speculation
        )
        return next(e for e in engine.chat(messages, config) if isinstance(e, FinishedEvent)).text

    plain = run(speculative=False)
    jsonschema.validate(json.loads(plain), REAL_SCHEMAS[index])
    assert run(drafter="model") == plain
    assert run(drafter="ngram") == plain
