"""/v1/completions (raw prompts, fill-in-the-middle) and log-probabilities on the tiny models, read by the official
`openai` SDK as a client would, streamed and whole; and the fields this server refuses, each by name."""

from __future__ import annotations

import math

import openai
import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.local.engine import SpecEngine
from app.testing.synthetic import write_tiny_model
from app.testing.vocab import VocabSpec, build_vocab
from tests.serve.api_fixtures import DEADLINE_S, chat_body, client, running_api

PROMPT = "def add(a, b):\n    return"


@pytest.fixture(scope="module")
def api(tiny_models):
    with running_api(tiny_models) as running:
        yield running


@pytest.fixture(scope="module")
def sdk(api):
    return openai.OpenAI(base_url=f"{api.url}/v1", api_key="none", timeout=DEADLINE_S, max_retries=0)


def test_the_sdk_reads_a_completion_whole_and_streamed(sdk):
    whole = sdk.completions.create(model="m", prompt=PROMPT, max_tokens=12, temperature=0)
    choice = whole.choices[0]
    assert whole.object == "text_completion" and choice.text
    assert choice.finish_reason == "length" and whole.usage.completion_tokens == 12
    assert whole.usage.prompt_tokens > 0
    streamed = list(sdk.completions.create(model="m", prompt=PROMPT, max_tokens=12, temperature=0, stream=True))
    assert "".join(c.choices[0].text for c in streamed if c.choices) == choice.text
    assert [c.choices[0].finish_reason for c in streamed if c.choices][-1] == "length"


def test_a_token_prompt_and_echo(sdk, api):
    with client() as http:
        tokens = http.post(f"{api.url}/v1/completions", json={"prompt": PROMPT, "max_tokens": 4}).json()
        assert tokens["usage"]["prompt_tokens"] > 0
    echoed = sdk.completions.create(model="m", prompt=PROMPT, max_tokens=6, temperature=0, echo=True)
    plain = sdk.completions.create(model="m", prompt=PROMPT, max_tokens=6, temperature=0)
    assert echoed.choices[0].text == PROMPT + plain.choices[0].text
    ids = sdk.completions.create(model="m", prompt=[72, 105], max_tokens=3, temperature=0)
    assert ids.usage.prompt_tokens == 2 and ids.choices[0].text


def test_a_stop_string_ends_a_completion(sdk):
    text = sdk.completions.create(model="m", prompt=PROMPT, max_tokens=24, temperature=0).choices[0].text
    stop = text[3:5]
    assert stop.strip(), text
    cut = sdk.completions.create(model="m", prompt=PROMPT, max_tokens=24, temperature=0, stop=[stop])
    assert cut.choices[0].text == text[: text.index(stop)] and cut.choices[0].finish_reason == "stop"


def test_completion_logprobs_come_with_the_text(sdk):
    reply = sdk.completions.create(model="m", prompt=PROMPT, max_tokens=8, temperature=0, logprobs=3)
    lp = reply.choices[0].logprobs
    assert "".join(lp.tokens) == reply.choices[0].text
    assert len(lp.token_logprobs) == 8 and all(v <= 0 for v in lp.token_logprobs)
    assert all(len(top) == 3 for top in lp.top_logprobs)
    # Greedy: the written token is the likeliest.
    assert all(math.isclose(max(top.values()), v, abs_tol=1e-5) for top, v in zip(lp.top_logprobs, lp.token_logprobs))


def test_chat_logprobs_read_by_the_sdk_whole_and_streamed(sdk):
    messages = [{"role": "user", "content": "Say something."}]
    whole = sdk.chat.completions.create(
        model="m", messages=messages, max_tokens=8, temperature=0, logprobs=True, top_logprobs=2
    )
    content = whole.choices[0].logprobs.content
    assert "".join(t.token for t in content) == whole.choices[0].message.content
    assert all(len(t.top_logprobs) == 2 and t.top_logprobs[0].logprob >= t.top_logprobs[1].logprob for t in content)
    assert all(abs(t.logprob - t.top_logprobs[0].logprob) < 1e-5 for t in content)  # greedy: the best one
    streamed = list(
        sdk.chat.completions.create(
            model="m", messages=messages, max_tokens=8, temperature=0, logprobs=True, top_logprobs=2, stream=True
        )
    )
    got = [t for c in streamed if c.choices and c.choices[0].logprobs for t in c.choices[0].logprobs.content]
    assert [(t.token, round(t.logprob, 4)) for t in got] == [(t.token, round(t.logprob, 4)) for t in content]


def test_penalties_change_a_repetitive_completion(sdk):
    def text(**penalties) -> str:
        return (
            sdk.completions.create(model="m", prompt="the the the the", max_tokens=40, temperature=0, **penalties)
            .choices[0]
            .text
        )

    plain = text()
    assert text(frequency_penalty=2.0) != plain and text(presence_penalty=2.0) != plain


@pytest.mark.parametrize(
    "path,field,value",
    [
        ("chat/completions", "logit_bias", {"1": 5}),
        ("chat/completions", "n", 2),
        ("completions", "n", 2),
        ("chat/completions", "top_logprobs", 2),
        ("chat/completions", "presence_penalty", 3),
        ("completions", "best_of", 3),
        ("completions", "logprobs", 99),
        ("chat/completions", "typical_p", 0.5),
        ("chat/completions", "repeat_penalty", 0),
        ("completions", "tfs_z", 0.9),
        ("chat/completions", "ignore_eos", "yes"),
    ],
)
def test_what_is_not_honoured_is_refused_by_name(api, path, field, value):
    body = {"prompt": PROMPT} if path == "completions" else chat_body("hi")
    with client() as http:
        reply = http.post(f"{api.url}/v1/{path}", json={**body, field: value})
    assert reply.status_code == 400 and field in reply.json()["error"]["message"]


def test_a_suffix_on_a_model_without_fim_tokens_is_refused(api):
    with client() as http:
        reply = http.post(f"{api.url}/v1/completions", json={"prompt": PROMPT, "suffix": "\n"})
    assert reply.status_code == 400 and "fill-in-the-middle" in reply.json()["error"]["message"]


def _fim_model(tmp_path):
    """A tiny model whose reserved tokens 0-2 are its FIM markers (as Qwen2.5-Coder's GGUF names its own)."""
    tokens = build_vocab(VocabSpec()).tokens
    keys = ("fim_pre", "fim_suf", "fim_mid")
    ids = [tokens.index(f"<|reserved_{i}|>") for i in range(3)]
    return write_tiny_model(
        tmp_path / "fim.gguf", extra_metadata=[(f"tokenizer.ggml.{k}_token_id", i) for k, i in zip(keys, ids)]
    ), ids


def test_a_suffix_fills_in_the_middle_through_the_fim_tokens(tmp_path):
    path, (pre, suf, mid) = _fim_model(tmp_path)
    engine = SpecEngine(LoadSettings(n_ctx=512, n_threads=1))
    try:
        engine.load_target(path)
        tokens = engine.completion_tokens("def f(x):\n", "\n    return y\n")
        assert tokens[0] == pre and tokens[-1] == mid and suf in tokens
        target = engine.target
        assert target is not None
        between = tokens[tokens.index(pre) + 1 : tokens.index(suf)]
        assert between == target.tokenize("def f(x):\n", add_special=False, parse_special=False)
        events = list(engine.complete(tokens, GenerationConfig(max_tokens=4, history=False)))
        assert events[-1].stats.tokens == 4
    finally:
        engine.close()
