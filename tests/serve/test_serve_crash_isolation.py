"""`specchat-cli serve` runs its models in an engine process of its own: a llama.cpp crash (here a signal sent to
that process, or the tests' abort hook) costs only the request in flight, which gets one error with a sentence,
and the next request is answered by a fresh engine process. Stopping the server leaves no process behind."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

import pytest

from app.engine.host.api_answers import CRASH_ENV
from tests.serve.api_fixtures import DEADLINE_S, chat_body, client
from tests.support.processes import cli_child_pid, cli_command, engine_child_pid, is_running, run_cli

ROOT = Path(__file__).resolve().parents[2]
CRASH_WORD = "please-crash-the-engine"


class Served:
    def __init__(self, process: subprocess.Popen, url: str, lines: queue.Queue):
        self.process, self.url, self.lines = process, url, lines
        self.cli_pid = cli_child_pid(process)

    def engine_pid(self, other_than: int | None = None) -> int:
        return engine_child_pid(self.cli_pid, DEADLINE_S, other_than)

    def wait_for_line(self, pattern: str) -> str:
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            if re.search(pattern, line):
                return line
        raise AssertionError(f"serve never logged {pattern!r}")


def _start(target: Path) -> tuple[subprocess.Popen, queue.Queue]:
    process = subprocess.Popen(
        cli_command("serve", "--target", str(target), "--port", "0", "--threads", "1"),
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env=dict(os.environ, **{CRASH_ENV: CRASH_WORD}),
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    return process, lines


def _end(process: subprocess.Popen, how: int = signal.SIGINT) -> int:
    process.send_signal(how)
    try:
        return process.wait(DEADLINE_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(DEADLINE_S)


@pytest.fixture(scope="module")
def server(tiny_models):
    """One server for the module's tests: each kills its engine and waits until a fresh one answers, which is what
    a server that lives on does; it must still stop cleanly once they are done."""
    process, lines = _start(tiny_models.target)
    try:
        first = lines.get(timeout=DEADLINE_S)
        found = re.search(r"at (http://127\.0\.0\.1:\d+)/v1", first)
        assert found, first
        yield Served(process, found.group(1), lines)
    finally:
        code = _end(process)
    assert code == 0


@pytest.fixture
def served(server):
    """The module's server, its engine answering and the log lines of the tests before left behind."""
    assert _answered(server.url)
    while not server.lines.empty():
        server.lines.get_nowait()
    return server


def _answered(url: str) -> str:
    with client() as http:
        reply = http.post(f"{url}/v1/chat/completions", json=chat_body("the cat", 8))
    assert reply.status_code == 200, reply.text
    return reply.json()["choices"][0]["message"]["content"]


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGSEGV], ids=["SIGKILL", "SIGSEGV"])
def test_an_engine_killed_mid_reply_costs_that_reply_only(served, signum):
    engine = served.engine_pid()
    events, done = [], False
    with client() as http:
        body = {**chat_body("the cat and the dog", 3000), "stream": True}
        with http.stream("POST", f"{served.url}/v1/chat/completions", json=body) as response:
            assert response.status_code == 200
            for line in response.iter_lines():
                if line == "data: [DONE]":
                    done = True
                elif line.startswith("data: "):
                    events.append(json.loads(line[len("data: ") :]))
                    if len(events) == 2:  # the reply has begun: its first token is out
                        os.kill(engine, signum)
    errors = [event["error"] for event in events if "error" in event]
    name = signal.Signals(signum).name
    assert errors == [
        {
            "message": f"The engine stopped (killed by {name}) while answering; it is restarting.",
            "type": "server_error",
            "code": 500,
        }
    ]
    assert not done and "error" in events[-1]
    served.wait_for_line(r"The engine is back \(\d+\.\d s")
    assert _answered(served.url)  # the next request is answered, by a fresh engine process
    assert served.engine_pid(other_than=engine) != engine and not is_running(engine)


def test_a_request_that_crashes_the_engine_gets_an_error_and_the_next_one_is_answered(served):
    engine = served.engine_pid()
    with client() as http:
        crashed = http.post(f"{served.url}/v1/chat/completions", json=chat_body(f"say {CRASH_WORD}", 8))
        models = http.get(f"{served.url}/v1/models")
    assert crashed.status_code == 500
    assert crashed.json()["error"]["message"] == (
        "The engine stopped (killed by SIGABRT) while answering; it is restarting."
    )
    assert models.status_code == 200 and models.json()["data"][0]["id"] == "tiny-target"
    assert _answered(served.url)
    assert not is_running(engine)


@pytest.mark.slow
def test_stopping_the_server_leaves_no_engine_process(tiny_models):
    for how in (signal.SIGTERM, signal.SIGINT):
        process, lines = _start(tiny_models.target)
        assert "Serving tiny-target" in lines.get(timeout=DEADLINE_S)
        engine = engine_child_pid(cli_child_pid(process))
        assert _end(process, how) == 0
        assert not is_running(engine)


def test_a_server_killed_outright_takes_its_engine_process_with_it(tiny_models):
    process, lines = _start(tiny_models.target)
    try:
        assert "Serving tiny-target" in lines.get(timeout=DEADLINE_S)
        cli = cli_child_pid(process)
        engine = engine_child_pid(cli)
        os.kill(cli, signal.SIGKILL)
        deadline = time.monotonic() + DEADLINE_S
        while is_running(engine) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not is_running(engine)
    finally:
        _end(process, signal.SIGKILL)


def test_an_engine_that_dies_loading_the_model_is_one_sentence_and_exit_1(tiny_models, tmp_path):
    target = tmp_path / f"{CRASH_WORD}.gguf"
    shutil.copy(tiny_models.target, target)
    done = run_cli(
        "serve",
        "--target",
        str(target),
        "--port",
        "0",
        timeout=DEADLINE_S,
        env=dict(os.environ, **{CRASH_ENV: CRASH_WORD}),
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == "error: The engine stopped (killed by SIGABRT) while loading the model.", (
        done.stderr
    )
