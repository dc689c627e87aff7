"""`specchat-cli serve` on loopback, as a user runs it: its streamed replies are `generate --chat`'s, its chunks name
each token's drafter, and `generate --server` against it highlights the drafted tokens."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests.serve.api_fixtures import (
    DEADLINE_S,
    serving_process,
    chat_body,
    client,
    stream_chunks,
    streamed_text,
    streamed_tokens,
)
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]
MESSAGE = "the cat and the dog"


def _cli(*args, timeout: float = 300) -> subprocess.CompletedProcess:
    return run_cli(*args, timeout=timeout)


def _request_lines(lines, count: int) -> list[str]:
    """The next `count` lines that log a request, past what the start logged (the KV cache of requests at once)."""
    logged: list[str] = []
    while len(logged) < count:
        line = lines.get(timeout=DEADLINE_S)
        if line.startswith("request "):
            logged.append(line)
    return logged


@pytest.fixture
def served(tiny_models):
    """`specchat-cli serve` with the tiny pair on a free port; yields its base URL and a queue of the lines it
    writes to stderr after the first, then stops it with Ctrl+C."""
    with serving_process("--target", tiny_models.target, "--draft", tiny_models.draft, "--draft-max", 3) as serve:
        assert "4 requests at once" in serve.first  # Auto, the default: the tiny pair's caches fit any machine
        yield serve.url, serve.lines
    assert serve.process.returncode == 0


@pytest.mark.slow
def test_served_reply_is_generates_reply_and_names_each_tokens_drafter(tiny_models, served):
    served, _ = served
    local = _cli(
        "generate",
        "--target",
        tiny_models.target,
        "--draft",
        tiny_models.draft,
        "--draft-max",
        3,
        "--threads",
        1,
        "--chat",
        MESSAGE,
        "--max-tokens",
        40,
        "--json",
    )
    assert local.returncode == 0, local.stderr
    expected = json.loads(local.stdout)

    chunks = stream_chunks(served, chat_body(MESSAGE, 40))
    assert streamed_text(chunks) == expected["text"]  # greedy: speculation changes the speed, never the reply
    tokens = streamed_tokens(chunks)
    drafters = [t["drafter"] for t in tokens]
    assert len(tokens) == 40 and set(drafters) <= {"model", "ngram", None}
    assert len(tokens) - drafters.count(None) == chunks[-1]["specchat"]["accepted"] > 0

    # SpecChat's own client of OpenAI-compatible servers reads the same reply's llama-server counters.
    remote = _cli(
        "generate", "--server", served, "--model", "tiny-target", "--chat", MESSAGE, "--max-tokens", 40, "--json"
    )
    assert remote.returncode == 0, remote.stderr
    highlighted = json.loads(remote.stdout)
    assert highlighted["text"] == expected["text"]
    assert [t["source"] for t in highlighted["tokens"]] == ["target" if d is None else "draft" for d in drafters]


@pytest.mark.slow
def test_a_port_in_use_is_one_sentence(tiny_models, served):
    port = served[0].rsplit(":", 1)[1]
    done = _cli("serve", "--target", tiny_models.target, "--port", port, "--threads", 1, timeout=DEADLINE_S)
    assert done.returncode == 1
    assert done.stderr.strip() == f"error: Port {port} on 127.0.0.1 is in use; choose another port."


def test_a_reply_ended_by_a_stop_string_is_logged_with_its_totals(served):
    url, lines = served
    with client() as http:
        full = http.post(f"{url}/v1/chat/completions", json=chat_body(MESSAGE, 30)).json()
        stop = full["choices"][0]["message"]["content"][10:13]
        cut = http.post(f"{url}/v1/chat/completions", json=chat_body(MESSAGE, 30, stop=[stop])).json()
    assert cut["choices"][0]["finish_reason"] == "stop" and cut["specchat"]["rounds"] > 0
    logged = _request_lines(lines, 2)
    assert logged[0].startswith("request 1: 30 tokens") and "ended by a stop string" not in logged[0]
    assert logged[1].startswith("request 2: ") and logged[1].rstrip().endswith(", ended by a stop string")
    # Who drafted what was kept, so that whoever runs the server sees what drafting gave each request.
    assert re.search(r"\d+ of \d+ drafted tokens kept \((n-gram lookup|the draft model) \d+", logged[1]), logged[1]


@pytest.mark.slow
def test_bad_arguments_are_refused_before_loading(tiny_models):
    for args, said in (
        (["--port", "70000"], "--port"),
        (["--api-key", " "], "--api-key"),
        (["--max-tokens", "0"], "--max-tokens"),
        (["--image-url-hosts", "10.0.0.5"], "--image-url-hosts needs --fetch-image-urls"),
        (["--fetch-image-urls", "--image-url-hosts", "10.0.0.5,no host"], "--image-url-hosts must be host names"),
    ):
        done = _cli("serve", "--target", tiny_models.target, *args, timeout=DEADLINE_S)
        assert done.returncode == 2 and said in done.stderr, done.stderr


@pytest.mark.slow
def test_a_draft_renamed_while_serving_is_answered_without_and_logged_once(tiny_models, tmp_path):
    """Every request is answered (n-gram drafts from then on), and whoever runs the server reads why in its log."""
    import shutil

    draft = tmp_path / tiny_models.draft.name
    shutil.copyfile(tiny_models.draft, draft)
    with serving_process("--target", tiny_models.target, "--draft", draft) as serve:
        draft.rename(tmp_path / "moved-away.gguf")
        with client() as http:
            replies = [http.post(f"{serve.url}/v1/chat/completions", json=chat_body(MESSAGE, 12)) for _ in range(2)]
        logged = [serve.lines.get(timeout=DEADLINE_S) for _ in range(3)]
    assert [r.status_code for r in replies] == [200, 200]
    assert all(r.json()["choices"][0]["message"]["content"] for r in replies)
    notes = [line for line in logged if line.startswith("note: ")]
    assert notes == [
        f"note: The draft file {draft.name} is gone; drafting from earlier text until you choose another.\n"
    ]
