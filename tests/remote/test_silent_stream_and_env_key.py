"""A server's stream that only keeps itself open is given up on, and the API key never crosses plain http.

Issue 44, class 15, against the real CLI (`generate --server`) and a server on 127.0.0.1 that the test starts:
a stream that only keeps itself open (keep-alive comments, or events with no token) is given up on with a sentence,
and SPECCHAT_API_KEY never travels over plain http to another machine."""

from __future__ import annotations

import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

from tests.remote.fake_openai_server import FakeServer, Script, content_chunk
from tests.support.processes import run_cli

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 90  # the fake server keeps the stream open for longer than this; a run past it is a hang


def _chat(url: str, *extra: str, env: dict) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SPECCHAT_API_KEY")}
    full_env.update(PYTHONPATH=str(ROOT), **env)
    return run_cli(
        "generate", "--server", url, "--model", "fake-model", "--chat", "hi", *extra, timeout=DEADLINE_S, env=full_env
    )


@pytest.mark.parametrize(
    "keep_alive",
    [b": keep-alive\n\n", b'data: {"choices": []}\n\n', b"data: " + json.dumps(content_chunk("")).encode() + b"\n\n"],
)
@pytest.mark.slow
@pytest.mark.parametrize("first", [[], [content_chunk("The first words")]])
def test_a_stream_that_only_keeps_itself_open_is_given_up_on(keep_alive, first):
    # Two minutes of keep-alives at 20 per second: without a deadline on them the CLI waits past DEADLINE_S.
    script = Script(chunks=first, end="comments", comment=keep_alive, comment_every_s=0.05, comment_limit=2400)
    with FakeServer(script) as server:
        done = _chat(server.url, env={"SPECCHAT_SILENT_STREAM_S": "1"})
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "sent no token for 1 s, only keep-alive comments or empty events" in done.stderr
    if first:
        assert done.stdout.startswith("The first words") and "the reply so far is kept" in done.stderr


def _other_host_url(server: FakeServer) -> str:
    """The server's URL by this machine's name: not a loopback name to the CLI, yet 127.0.0.1 underneath."""
    name = socket.gethostname()
    try:
        if socket.gethostbyname(name) != "127.0.0.1":
            pytest.skip(f"{name} is not 127.0.0.1 here")
    except OSError:
        pytest.skip("this machine's name does not resolve")
    return server.url.replace("127.0.0.1", name)


@pytest.mark.slow
def test_the_environments_key_is_not_sent_over_plain_http_to_another_machine(tmp_path):
    reply = [content_chunk("hi", finish="stop")]
    with FakeServer(Script(chunks=reply)) as server:
        url = _other_host_url(server)
        done = _chat(url, env={"SPECCHAT_API_KEY": "env-key-123", "SPECCHAT_API_KEY_SERVER": url})
        assert done.returncode == 0, done.stderr
        assert server.authorizations and set(server.authorizations) == {None}
        assert "SPECCHAT_API_KEY is not sent to" in done.stderr and "env-key-123" not in done.stderr
        # A key given for this server on purpose is sent, with the plain-http warning.
        key_file = tmp_path / "key"
        key_file.write_text("file-key-456\n")
        done = _chat(url, "--api-key-file", str(key_file), env={"SPECCHAT_API_KEY": "env-key-123"})
        assert done.returncode == 0, done.stderr
        assert server.authorizations[-1] == "Bearer file-key-456" and "over plain http" in done.stderr
        # To this machine by its loopback address, the environment's key goes as before.
        done = _chat(server.url, env={"SPECCHAT_API_KEY": "env-key-123"})
        assert done.returncode == 0 and server.authorizations[-1] == "Bearer env-key-123"
