"""An API server in this process over the tiny synthetic models, its engine on a thread of its own (as the CLI
and the engine process run it), and small client helpers."""

from __future__ import annotations

import json
import queue
import re
import signal
import subprocess
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator, Optional

try:  # the same HTTP client the app uses (pyproject.toml): httpx2, or httpx on Python 3.10
    import httpx2 as httpx
except ImportError:  # pragma: no cover
    import httpx  # type: ignore[no-redef]

from app.engine.config import GenerationConfig, LoadSettings
from app.serve.connections import ConnectionLimits
from app.serve.jobs import served_models, work_off
from app.serve.requests import ApiLimits, ApiOptions, api_history
from app.serve.server import ApiServer
from tests.support.processes import cli_command

if TYPE_CHECKING:
    import openai

DEADLINE_S = 60.0
# How much of each text of an agent's recorded request the tiny model's context (2048 tokens) holds.
TEXT_CHARS = 300
# A fixed draft length, so the tiny draft drafts every round whatever the auto controller would decide.
DRAFT_MAX = 3


@dataclass
class RunningApi:
    server: ApiServer
    done: list = field(default_factory=list)  # (job serial, FinishedEvent or None when stopped), in order
    done_event: threading.Condition = field(default_factory=threading.Condition)

    @property
    def url(self) -> str:
        return self.server.url

    def wait_done(self, count: int) -> list:
        """The first `count` answered jobs, waiting up to DEADLINE_S."""
        with self.done_event:
            assert self.done_event.wait_for(lambda: len(self.done) >= count, DEADLINE_S), self.done
            return list(self.done[:count])


@contextmanager
def running_api(
    tiny_models,
    api_key: Optional[str] = None,
    limits: ApiLimits = ApiLimits(),
    draft: bool = True,
    engine_gate: Optional[threading.Event] = None,
    connections: ConnectionLimits = ConnectionLimits(),
    defaults: Optional[GenerationConfig] = None,
    more_keys: tuple[str, ...] = (),
) -> Iterator[RunningApi]:
    """Start the server and an engine thread that owns the models (loaded there) and answers its queue, once
    `engine_gate` is set (requests wait in the queue until then). `defaults`: every reply's speculation (by default
    the draft model with a fixed draft length, or none). `more_keys`: further keys, each a client of its own."""
    if defaults is None:
        defaults = GenerationConfig(
            speculative=draft,
            drafter="model",
            draft_max=DRAFT_MAX if draft else None,
            session="api",
            **api_history(False),
        )
    server = ApiServer(
        ApiOptions(port=0, api_key=api_key, more_keys=more_keys, limits=limits, defaults=defaults), connections
    )
    api = RunningApi(server)
    stop = threading.Event()
    loaded = threading.Event()
    failure: list[BaseException] = []

    def on_done(job, finished) -> None:
        with api.done_event:
            api.done.append((job.serial, finished))
            api.done_event.notify_all()

    def engine_thread() -> None:
        from app.engine.local.engine import SpecEngine

        engine = SpecEngine(LoadSettings(n_ctx=2048, n_threads=1))
        try:
            engine.load_target(tiny_models.target)
            if draft:
                engine.load_draft(tiny_models.draft)
            server.publish(served_models(engine))
        except BaseException as exc:  # reported to the test below
            failure.append(exc)
            return
        finally:
            loaded.set()
        try:
            if engine_gate is not None:
                engine_gate.wait(DEADLINE_S)
            work_off(server.queue, engine, until=stop.is_set, on_done=on_done, poll_s=0.05)
        finally:
            engine.close()

    thread = threading.Thread(target=engine_thread, name="test engine", daemon=True)
    thread.start()
    assert loaded.wait(DEADLINE_S) and not failure, failure
    server.start()
    try:
        yield api
    finally:
        server.stop()
        stop.set()
        if engine_gate is not None:
            engine_gate.set()
        thread.join(DEADLINE_S)
        assert not thread.is_alive()


@contextmanager
def openai_sdk_serving(
    target,
    draft=None,
    defaults: Optional[GenerationConfig] = None,
    load: LoadSettings = LoadSettings(n_ctx=2048, n_threads=1),
) -> Iterator["openai.OpenAI"]:
    """`serve` over a SpecEngine loaded with `target` (and `draft`) on a thread of its own, read through the official
    `openai` SDK: the client is yielded. `defaults`: every reply's settings (the API's session, no history)."""
    import openai

    from app.engine.local.engine import SpecEngine

    if defaults is None:
        defaults = GenerationConfig(session="api", **api_history(False))
    server = ApiServer(ApiOptions(port=0, defaults=defaults))
    engine = SpecEngine(load)
    engine.load_target(target)
    if draft is not None:
        engine.load_draft(draft)
    server.publish(served_models(engine))
    stop = threading.Event()
    thread = threading.Thread(
        target=work_off,
        args=(server.queue, engine),
        kwargs={"until": stop.is_set, "poll_s": 0.05},
        name="test engine",
        daemon=True,
    )
    thread.start()
    server.start()
    try:
        yield openai.OpenAI(base_url=f"{server.url}/v1", api_key="none", timeout=DEADLINE_S * 4, max_retries=0)
    finally:
        server.stop()
        stop.set()
        thread.join(DEADLINE_S)
        engine.close()


def chat_body(message: str, max_tokens: int = 24, **extra) -> dict:
    return {
        "model": "tiny-target",
        "messages": [{"role": "user", "content": message}],
        "max_tokens": max_tokens,
        **extra,
    }


def client(api_key: Optional[str] = None) -> httpx.Client:
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    return httpx.Client(timeout=httpx.Timeout(DEADLINE_S), headers=headers, trust_env=False)


def stream_chunks(url: str, body: dict, api_key: Optional[str] = None) -> list[dict]:
    """Every event of a streamed chat completion, [DONE] left out."""
    chunks = []
    with client(api_key) as http:
        with http.stream("POST", f"{url}/v1/chat/completions", json={**body, "stream": True}) as response:
            assert response.status_code == 200, response.read()
            assert response.headers["content-type"].startswith("text/event-stream")
            for line in response.iter_lines():
                if line.startswith("data: ") and line != "data: [DONE]":
                    chunks.append(json.loads(line[len("data: ") :]))
    return chunks


def stream_events(url: str, body: dict, events: list[str], answer: Optional[dict] = None) -> None:
    """Stream a chat completion, each event's data appended to `events` as it arrives ([DONE] too), the response's
    status to answer["status"]: for a test that acts while the reply streams."""
    with client() as http:
        with http.stream("POST", f"{url}/v1/chat/completions", json={**body, "stream": True}) as response:
            if answer is not None:
                answer["status"] = response.status_code
            for line in response.iter_lines():
                if line.startswith("data: "):
                    events.append(line[len("data: ") :])


def together(calls) -> list:
    """Run the calls at once (a thread each, each given DEADLINE_S); their results in order, an exception as the
    result of a call that raised it."""
    results: list = [None] * len(calls)

    def run(i: int) -> None:
        try:
            results[i] = calls[i]()
        except Exception as exc:  # the caller's assertion shows it
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE_S)
    return results


def streamed_text(chunks: list[dict]) -> str:
    return "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks if c["choices"])


def streamed_tokens(chunks: list[dict]) -> list[dict]:
    return [t for c in chunks for t in c.get("specchat", {}).get("tokens", [])]


@dataclass
class ServeProcess:
    """A running `specchat-cli serve`: its base URL, its first line on stderr (where it serves), the lines it writes
    after that, and the process (its returncode says how it ended, once the `serving_process` block is left)."""

    url: str
    first: str
    lines: queue.Queue
    process: subprocess.Popen


@contextmanager
def serving_process(*args, threads: int = 1) -> Iterator[ServeProcess]:
    """`specchat-cli serve ARGS` on a free port of 127.0.0.1, on `threads` threads; stopped with Ctrl+C (killed
    after DEADLINE_S, which raises) when the block ends."""
    root = Path(__file__).resolve().parents[2]
    process = subprocess.Popen(
        cli_command("serve", *args, "--port", "0", "--threads", str(threads)),
        cwd=root,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in process.stderr], daemon=True).start()
    try:
        first = lines.get(timeout=DEADLINE_S)
        found = re.search(r"at (http://127\.0\.0\.1:\d+)/v1", first)
        assert found, first
        yield ServeProcess(found.group(1), first, lines, process)
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(DEADLINE_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(DEADLINE_S)
            raise


def cut_texts(value: Any, chars: int = TEXT_CHARS) -> Any:
    """An agent's recorded request with every text cut to `chars` characters, so it fits the tiny model's context;
    a tool's schema stays whole (its names are what a call is read against)."""
    if isinstance(value, str):
        return value[:chars]
    if isinstance(value, list):
        return [cut_texts(v, chars) for v in value]
    if isinstance(value, dict):
        return {k: (v if k == "input_schema" else cut_texts(v, chars)) for k, v in value.items()}
    return value
