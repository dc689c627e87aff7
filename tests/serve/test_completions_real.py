"""Fill-in-the-middle through /v1/completions with the real Qwen2.5-Coder 1.5B (the 0.5B drafting), read by the
official `openai` SDK: the middle it writes between a function's head and the code after it is the function's
body, streamed and whole, and speculation drafted part of it."""

from __future__ import annotations

import threading

import openai
import pytest

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.local.engine import SpecEngine
from app.serve.jobs import served_models, work_off
from app.serve.requests import ApiOptions, api_history
from app.serve.server import ApiServer
from tests.serve.api_fixtures import DEADLINE_S

pytestmark = pytest.mark.real_models

PREFIX = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'
SUFFIX = "\n\n\nprint(fibonacci(10))\n"


@pytest.fixture(scope="module")
def sdk(real_models):
    # A fixed draft length, so the draft model drafts whatever the controller would decide on a shared machine.
    defaults = GenerationConfig(session="api", drafter="model", draft_max=4, **api_history(False))
    server = ApiServer(ApiOptions(port=0, defaults=defaults))
    engine = SpecEngine(LoadSettings(n_ctx=2048))
    engine.load_target(real_models["target"])
    engine.load_draft(real_models["draft"])
    server.publish(served_models(engine))
    stop = threading.Event()
    thread = threading.Thread(target=work_off, args=(server.queue, engine),
                              kwargs={"until": stop.is_set, "poll_s": 0.05}, daemon=True)
    thread.start()
    server.start()
    try:
        yield openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", timeout=DEADLINE_S * 4, max_retries=0)
    finally:
        server.stop()
        stop.set()
        thread.join(DEADLINE_S)
        engine.close()


def test_the_1_5b_fills_in_a_function_body_between_prefix_and_suffix(sdk):
    whole = sdk.completions.create(model="m", prompt=PREFIX, suffix=SUFFIX, max_tokens=80, temperature=0)
    middle = whole.choices[0].text
    assert whole.choices[0].finish_reason == "stop", middle
    assert "return" in middle and "fibonacci(n" in middle.replace(" ", ""), middle
    namespace: dict = {}
    exec(compile(PREFIX + middle, "fim", "exec"), namespace)  # the model's own code: a function, nothing run
    assert namespace["fibonacci"](10) == 55
    assert whole.model_extra["specchat"]["accepted"] > 0  # the draft model's tokens were kept
    streamed = sdk.completions.create(model="m", prompt=PREFIX, suffix=SUFFIX, max_tokens=80, temperature=0,
                                      stream=True)
    assert "".join(c.choices[0].text for c in streamed if c.choices) == middle
