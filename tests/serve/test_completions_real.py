"""Fill-in-the-middle through /v1/completions with the real Qwen2.5-Coder 1.5B (the 0.5B drafting), read by the
official `openai` SDK: the middle it writes between a function's head and the code after it is the function's
body, streamed and whole, and speculation drafted part of it."""

from __future__ import annotations


import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.serve.requests import api_history
from tests.serve.api_fixtures import openai_sdk_serving

pytestmark = pytest.mark.real_models

PREFIX = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'
SUFFIX = "\n\n\nprint(fibonacci(10))\n"


@pytest.fixture(scope="module")
def sdk(real_models):
    # A fixed draft length, so the draft model drafts whatever the controller would decide on a shared machine.
    defaults = GenerationConfig(session="api", drafter="model", draft_max=4, **api_history(False))
    with openai_sdk_serving(real_models["target"], real_models["draft"], defaults, LoadSettings(n_ctx=2048)) as client:
        yield client


def test_the_1_5b_fills_in_a_function_body_between_prefix_and_suffix(sdk):
    whole = sdk.completions.create(model="m", prompt=PREFIX, suffix=SUFFIX, max_tokens=80, temperature=0)
    middle = whole.choices[0].text
    assert whole.choices[0].finish_reason == "stop", middle
    assert "return" in middle and "fibonacci(n" in middle.replace(" ", ""), middle
    namespace: dict = {}
    exec(compile(PREFIX + middle, "fim", "exec"), namespace)  # the model's own code: a function, nothing run
    assert namespace["fibonacci"](10) == 55
    assert whole.model_extra["specchat"]["accepted"] > 0  # the draft model's tokens were kept
    streamed = sdk.completions.create(
        model="m", prompt=PREFIX, suffix=SUFFIX, max_tokens=80, temperature=0, stream=True
    )
    assert "".join(c.choices[0].text for c in streamed if c.choices) == middle
