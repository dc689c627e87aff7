"""What one API client's requests leave behind is reused for the same key only: a client that sends another key's
earlier prompt finds none of it cached (`usage.prompt_tokens_details.cached_tokens` is 0 and the prompt is read
again), so the count cannot tell it, token by token, what another client wrote. Clients that send the same key
(or a server with no key: this machine's own programs) are one client and share."""

from __future__ import annotations

import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.serve.api_fixtures import DEADLINE_S, client, running_api
from tests.support.processes import cli_command

SECRET = " ".join(f"ledger{i % 89}" for i in range(120))  # long enough to be kept (app.engine.local.kv_states)


def _cached(url: str, key: str, prompt: str) -> int:
    with client(key) as http:
        reply = http.post(
            f"{url}/v1/chat/completions",
            json={"model": "tiny-target", "messages": [{"role": "user", "content": prompt}], "max_tokens": 4},
        )
    assert reply.status_code == 200, reply.text
    return reply.json()["usage"]["prompt_tokens_details"]["cached_tokens"]


def test_a_prompt_is_cached_for_its_own_key_only(tiny_models):
    guess = SECRET[: len(SECRET) // 2] + " and then what?"  # another client's guess at how alice's prompt begins
    with running_api(tiny_models, draft=False, api_key="alice-key", more_keys=("bob-key",)) as api:
        assert _cached(api.url, "alice-key", SECRET) == 0
        assert _cached(api.url, "bob-key", guess) == 0  # a right guess says nothing
        assert _cached(api.url, "alice-key", SECRET + " More?") > 100  # alice's own state was kept
        assert _cached(api.url, "bob-key", guess + " Again?") > 30  # and bob's own


def test_clients_of_one_key_are_one_client(tiny_models):
    with running_api(tiny_models, draft=False, api_key="shared-key") as api:
        _cached(api.url, "shared-key", SECRET)
        assert _cached(api.url, "shared-key", SECRET + " More?") > 100


@pytest.mark.slow
def test_serve_takes_a_key_per_client(tiny_models):
    """`serve --api-key A --api-key B`: each key is let in, any other is refused."""
    process = subprocess.Popen(
        cli_command(
            "serve",
            "--target",
            str(tiny_models.target),
            "--port",
            "0",
            "--threads",
            "1",
            "--api-key",
            "alice-key",
            "--api-key",
            "bob-key",
        ),
        cwd=Path(__file__).resolve().parents[2],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        found = re.search(r"at (http://127\.0\.0\.1:\d+)/v1", process.stderr.readline())
        assert found
        assert _cached(found.group(1), "alice-key", "hi") == 0 and _cached(found.group(1), "bob-key", "hi") == 0
        with client("eve-key") as http:
            assert http.get(f"{found.group(1)}/v1/models").status_code == 401
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(DEADLINE_S)
