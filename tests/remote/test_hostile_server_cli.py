"""`specchat-cli generate --server` (the real CLI, a subprocess) against a hostile server on 127.0.0.1: every input
gets its sentence and exit status, nothing crashes, nothing unbounded is kept, nothing a server sent reaches the
terminal as a control sequence, and no secret is echoed or sent where it does not belong."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.processes import cli_command, interrupt, run_cli
from tests.remote.fake_openai_server import FakeServer, Script, content_chunk

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 120  # every CLI run ends well within this; a run past it is a hang, and the test fails


def _cli(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if k != "SPECCHAT_API_KEY"}
    full_env.update(PYTHONPATH=str(ROOT), **(env or {}))
    return run_cli("generate", *args, timeout=DEADLINE_S, env=full_env)


def _chat(server: FakeServer, *extra: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return _cli("--server", server.url, "--model", "fake-model", "--chat", "hi", *extra, env=env)


def _one_sentence(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    assert "internal error" not in stderr and "Traceback" not in stderr
    return lines[0]


def _timed(text: str, n: int, **timings) -> dict:
    return content_chunk(text, {"predicted_n": n, "predicted_per_second": 10.0, **timings})


def test_a_lone_surrogate_is_replaced_and_the_reply_kept():
    chunks = [content_chunk("ok \ud800 done"), content_chunk("", finish="stop")]
    with FakeServer(Script(models=[("fake-model", "vllm")], chunks=chunks)) as server:
        done = _chat(server, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["text"] == "ok \ufffd done"


def test_counters_from_the_server_are_clamped_to_the_request():
    # Ten million tokens claimed by a 200-byte event; more accepted drafts than drafts; string and negative counters.
    chunks = [
        _timed("a", 1),
        _timed("b", 10_000_000, draft_n=4, draft_n_accepted=4_000_000_000),
        content_chunk("c", {"predicted_n": "3", "draft_n": -5, "prompt_n": "7", "cache_n": "1"}),
        content_chunk("", {"predicted_n": 10_000_000}, finish="stop"),
    ]
    with FakeServer(Script(chunks=chunks)) as server:
        done = _chat(server, "--json", "--max-tokens", "16")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    stats = out["stats"]
    assert len(out["tokens"]) <= 16 and stats["tokens"] <= 16
    assert stats["accepted"] <= stats["drafted"] and 0.0 <= stats["acceptance_rate"] <= 1.0
    assert out["text"].startswith("ab")


def test_an_endless_stream_ends_at_max_tokens():
    with FakeServer(Script(models=[("fake-model", "vllm")], end="endless")) as server:
        done = _chat(server, "--json", "--max-tokens", "16")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert len(out["tokens"]) == 16 and out["stats"]["stop_reason"] == "max_tokens"
    assert server.sent_bytes < 64 << 20  # the client hung up instead of reading on


@pytest.mark.slow
def test_a_huge_error_body_and_a_line_without_end_are_read_only_up_to_their_caps():
    with FakeServer(Script(status=500, error_flood_bytes=300 << 20)) as server:
        done = _chat(server)
        sent = server.sent_bytes
    assert done.returncode == 1
    line = _one_sentence(done.stderr)
    assert "answered HTTP 500" in line and len(line) < 400
    assert sent < 64 << 20
    with FakeServer(Script(end="flood")) as server:
        done = _chat(server)
        sent = server.sent_bytes
    assert done.returncode == 1
    assert "sent a malformed event (a line longer than 1 MB)" in _one_sentence(done.stderr)
    assert sent < 64 << 20


def test_a_huge_model_list_is_cut_and_control_characters_in_ids_are_not_offered():
    models = {"data": [{"id": f"m{i}"} for i in range(5000)] + [{"id": "evil\x1b]0;pwned\x07"}, {"id": 5}, "x"]}
    with FakeServer(Script(models_body=models)) as server:
        done = _cli("--server", server.url, "--model", "nope", "--chat", "hi")
    assert done.returncode == 1
    line = _one_sentence(done.stderr)
    assert 'has no model "nope"; it offers: m0, m1' in line and "\x1b" not in line


@pytest.mark.slow
def test_each_malformed_event_is_one_sentence():
    bad_events = [
        b"data: [1,2,3]\n\n",
        b'data: {"choices": [{"delta": 5}]}\n\n',
        b'data: {"choices": {"a": 1}}\n\n',
        b"data: " + b"[" * 100_000 + b"\n\n",
        b'data: {"choices": [{"delta": {"content": 7}}]}\n\n',
        b"data: {not json\n\n",
        b'data: {"choices": ["x"]}\n\n',
    ]
    for raw in bad_events:
        with FakeServer(Script(chunks=[content_chunk("kept ")], raw=[raw])) as server:
            done = _chat(server)
        assert done.returncode == 1, raw[:40]
        assert "sent a malformed event" in _one_sentence(done.stderr), raw[:40]
        assert done.stdout.startswith("kept ")  # what arrived before it is printed


@pytest.mark.slow
def test_escape_codes_from_a_server_never_reach_the_terminal():
    chunks = [content_chunk("clear\x1b[2J title\x1b]0;pwned\x07 csi\x9b31m ok\n"), content_chunk("", finish="stop")]
    with FakeServer(Script(models=[("fake-model", "vllm")], chunks=chunks)) as server:
        done = _chat(server)
        assert done.returncode == 0, done.stderr
        # Shown escaped, visibly (app.common.text.printable): never obeyed, and never hidden either.
        assert done.stdout == "clear\\x1b[2J title\\x1b]0;pwned\\x07 csi\\x9b31m ok\n\n"
        json_out = _chat(server, "--json").stdout
    assert "\x1b" not in json_out and "\x9b" not in json_out and "\x07" not in json_out
    assert json.loads(json_out)["text"].startswith("clear\x1b[2J")  # --json keeps the text, escaped
    error = {"error": {"message": "bad\x1b[2J\x1b]0;pwned\x07 thing"}}
    with FakeServer(Script(status=500, error_body=error)) as server:
        done = _chat(server)
    assert (
        "\x1b" not in done.stderr and "\x07" not in done.stderr and "bad\\x1b[2J\\x1b]0;pwned\\x07 thing" in done.stderr
    )


@pytest.mark.slow
def test_url_credentials_are_never_echoed():
    with FakeServer(Script(status=500, error_body={"error": "boom"})) as server:
        url = server.url.replace("http://", "http://alice:hunter2@")
        done = _cli("--server", url, "--model", "fake-model", "--chat", "hi")
        assert server.requests  # the request was made (with the credentials as basic auth)
    assert done.returncode == 1 and "hunter2" not in done.stderr and "alice" not in done.stderr
    assert "answered HTTP 500" in done.stderr
    with FakeServer() as server:
        dead = server.url.replace("http://", "http://alice:hunter2@")
    done = _cli("--server", dead, "--model", "m", "--chat", "hi")
    assert done.returncode == 1 and "Cannot reach the server" in done.stderr and "hunter2" not in done.stderr


@pytest.mark.slow
def test_keys_go_only_to_the_server_they_are_for_and_plain_http_elsewhere_is_warned():
    from app.engine.remote.server_keys import save_api_key

    reply = [content_chunk("hi", finish="stop")]
    with FakeServer(Script(api_key="env-key", chunks=reply)) as server, FakeServer(Script(chunks=reply)) as other:
        save_api_key(server.url, "saved-key")  # saved for `server`: never sent to `other`
        done = _chat(other)
        assert done.returncode == 0, done.stderr
        assert other.authorizations and set(other.authorizations) == {None}
        done = _chat(server)  # the saved key is sent to its server (which wants another here)
        assert done.returncode == 1 and "refused the API key" in done.stderr
        assert server.authorizations[-1] == "Bearer saved-key"
        done = _chat(server, env={"SPECCHAT_API_KEY": "env-key"})  # the environment's key, for this URL, comes first
        assert done.returncode == 0, done.stderr
        assert "warning" not in done.stderr  # 127.0.0.1: the key does not cross the network
        assert server.authorizations[-1] == "Bearer env-key"
    from app.engine.remote.server_keys import plain_http_warning

    assert "over plain http" in plain_http_warning("http://user:pw@10.0.0.5:8080")
    assert "pw" not in plain_http_warning("http://user:pw@10.0.0.5:8080")
    assert plain_http_warning("https://10.0.0.5:8080") is None and plain_http_warning("localhost:8080") is None


def test_ctrl_c_on_a_silent_server_is_a_clean_exit():
    with FakeServer(Script(chunks=[content_chunk("first ")], end="stall", stall_s=60.0)) as server:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        env.pop("SPECCHAT_API_KEY", None)
        process = subprocess.Popen(
            cli_command("generate", "--server", server.url, "--model", "fake-model", "--chat", "hi"),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
        )
        try:
            assert process.stdout.read(len("first ")) == b"first "  # streaming, then the server goes silent
            time.sleep(0.2)
        finally:
            err = interrupt(process, DEADLINE_S)
    assert process.returncode == 130 and err.decode().strip().splitlines()[-1] == "interrupted"
    assert b"Traceback" not in err


def test_a_key_in_the_url_query_is_never_echoed():
    with FakeServer(Script(status=500, error_body={"error": "boom"})) as server:
        done = _cli("--server", f"{server.url}/v1?api_key=hunter2", "--model", "fake-model", "--chat", "hi")
    assert done.returncode == 1 and "hunter2" not in done.stderr and "answered HTTP" in done.stderr


def test_a_web_page_answered_with_200_is_said_as_such():
    with FakeServer(
        Script(content_type="text/html; charset=utf-8", raw=[b"<!doctype html><html><body>Router login</body></html>"])
    ) as server:
        done = _chat(server)
    assert done.returncode == 1 and "web page, not an OpenAI-compatible API" in _one_sentence(done.stderr)


def test_the_environments_key_for_another_machine_is_warned_about_and_never_echoed():
    from app.engine.remote.server_keys import env_key_warning

    env = dict(os.environ, SPECCHAT_API_KEY="env-key-123")
    env.pop("SPECCHAT_API_KEY_SERVER", None)
    server = "https://gpu-box.example:8080"
    old = dict(os.environ)
    try:
        os.environ.clear()
        os.environ.update(env)
        warning = env_key_warning(server)
        assert "SPECCHAT_API_KEY is sent to https://gpu-box.example:8080" in warning and "env-key-123" not in warning
        os.environ["SPECCHAT_API_KEY_SERVER"] = "https://gpu-box.example:8080/v1"
        assert env_key_warning(server) is None  # it is meant for this server
        assert env_key_warning("http://127.0.0.1:8080") is None
    finally:
        os.environ.clear()
        os.environ.update(old)


def test_a_server_that_sends_only_keep_alive_comments_is_given_up_on():
    from app.engine.remote.http import stream_chat
    from app.engine.remote.server_errors import ServerError

    with FakeServer(Script(end="comments", comment_every_s=0.05)) as server:
        started = time.monotonic()
        try:
            list(stream_chat(server.url, {"model": "fake-model", "messages": [], "stream": True}, None, silent_s=0.5))
        except ServerError as exc:
            said = str(exc)
        else:
            said = ""
    assert "sent no token for 0.5 s, only keep-alive comments" in said and time.monotonic() - started < 20
