"""The API server inside the engine process's loop: it answers with the models the window loaded, between the
window's own requests, tells the window when it is answering one, and the window's Stop ends that one."""

from __future__ import annotations

import multiprocessing
import threading
import time

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.host.wire import (ApiStateChanged, GenerateReply, LoadModels, ModelsLoaded, ReplyEnded, ServeApi,
                                  Shutdown, WorkerReady)
from app.engine.host.worker import _WorkerLoop, default_engine_factory
from app.engine.targets import LocalModel
from app.serve.engine.host import ApiServeSpec, ApiState
from tests.serve.api_fixtures import DEADLINE_S, chat_body, client, stream_chunks, streamed_text


class _Window:
    """The window's end of the pipe: sends requests, and reads replies with a deadline."""

    def __init__(self):
        self.conn, worker_conn = multiprocessing.Pipe()
        self.cancelled = multiprocessing.RawValue("q", 0)
        self.api_stopped = multiprocessing.RawValue("q", 0)
        self.loop = _WorkerLoop(worker_conn, self.cancelled, default_engine_factory, self.api_stopped)
        self.thread = threading.Thread(target=self._run, name="engine loop", daemon=True)
        self.thread.start()
        assert self.next(WorkerReady)

    def _run(self) -> None:
        try:
            self.loop.serve()
        finally:
            self.loop.close()

    def next(self, kind: type, where=lambda message: True):
        """The next reply of type `kind` that satisfies `where` (others are skipped)."""
        while True:
            assert self.conn.poll(DEADLINE_S), f"no {kind.__name__} reply"
            message = self.conn.recv()
            if isinstance(message, kind) and where(message):
                return message

    def close(self) -> None:
        self.conn.send(Shutdown())
        self.thread.join(DEADLINE_S)
        assert not self.thread.is_alive()


def test_the_window_models_answer_the_api_and_stop_ends_a_request(tiny_models):
    window = _Window()
    try:
        window.conn.send(LoadModels(1, LocalModel(tiny_models.target), tiny_models.draft,
                                    LoadSettings(n_ctx=2048, n_threads=1)))
        window.next(ModelsLoaded)
        window.conn.send(ServeApi(ApiServeSpec(port=0)))
        state: ApiState = window.next(ApiStateChanged).state
        assert state.url.startswith("http://127.0.0.1:") and not state.error

        with client() as http:
            assert [m["id"] for m in http.get(f"{state.url}/v1/models").json()["data"]] == ["tiny-target"]
        chunks = stream_chunks(state.url, chat_body("the cat and the dog", 20))
        assert streamed_text(chunks)
        serving = window.next(ApiStateChanged, lambda m: m.state.serving).state
        assert serving.model == "tiny-target"
        assert window.next(ApiStateChanged, lambda m: not m.state.serving).state.answered == 1

        # The window's own reply still comes, between the API's.
        window.conn.send(GenerateReply(2, ({"role": "user", "content": "hi"},), GenerationConfig(max_tokens=4)))
        assert window.next(ReplyEnded).request_id == 2

        # A long API reply, stopped from the window: the client sees the stream end, and the engine is free.
        with client() as http:
            body = {**chat_body("the cat and the dog", 1500), "stream": True}
            with http.stream("POST", f"{state.url}/v1/chat/completions", json=body) as response:
                lines = response.iter_lines()
                next(lines)
                serving = window.next(ApiStateChanged, lambda m: m.state.serving).state
                window.api_stopped.value = serving.serving
                rest = [line for line in lines if line.startswith("data: ")]
        assert len(rest) < 1500 and "stopped in the SpecChat window" in rest[-1]  # an error event says why
        assert window.next(ApiStateChanged, lambda m: not m.state.serving).state.answered == 2

        window.conn.send(ServeApi(None))
        assert window.next(ApiStateChanged).state == ApiState()  # stopped listening
    finally:
        window.close()


def test_a_port_in_use_is_said_to_the_window(tiny_models):
    window = _Window()
    try:
        window.conn.send(ServeApi(ApiServeSpec(port=0)))
        url = window.next(ApiStateChanged).state.url
        port = int(url.rsplit(":", 1)[1])
        second = _Window()
        try:
            second.conn.send(ServeApi(ApiServeSpec(port=port)))
            state = second.next(ApiStateChanged).state
            assert not state.url and state.error == f"Port {port} on 127.0.0.1 is in use; choose another port."
        finally:
            second.close()
    finally:
        window.close()


def _serving(window: _Window, tiny_models) -> str:
    window.conn.send(LoadModels(1, LocalModel(tiny_models.target), tiny_models.draft,
                                LoadSettings(n_ctx=2048, n_threads=1)))
    window.next(ModelsLoaded)
    window.conn.send(ServeApi(ApiServeSpec(port=0)))
    return window.next(ApiStateChanged).state.url


def test_a_template_out_of_budget_ends_only_its_request_in_the_engine_process(tiny_models, monkeypatch):
    from app.engine.host.wire import ReplyFailed
    from app.engine.local import chat_format

    window = _Window()
    try:
        url = _serving(window, tiny_models)
        # Budgets so small that even ChatML, the fallback, runs out (what 40,000 messages once did): the API's
        # client and the window each get a sentence, and the engine process goes on.
        monkeypatch.setattr(chat_format, "BASE_STEPS", 3)
        monkeypatch.setattr(chat_format, "STEPS_PER_MESSAGE", 0)
        with client() as http:
            refused = http.post(f"{url}/v1/chat/completions", json=chat_body("hi", 4))
        assert refused.status_code == 400 and "could not be formatted" in refused.json()["error"]["message"]
        window.conn.send(GenerateReply(2, ({"role": "user", "content": "hi"},), GenerationConfig(max_tokens=4)))
        failed = window.next(ReplyFailed)
        assert failed.request_id == 2 and "could not be formatted" in failed.message
        assert window.next(ReplyEnded).request_id == 2
        monkeypatch.undo()

        assert streamed_text(stream_chunks(url, chat_body("the cat", 8)))
        window.conn.send(GenerateReply(3, ({"role": "user", "content": "hi"},), GenerationConfig(max_tokens=4)))
        assert window.next(ReplyEnded).request_id == 3
        assert window.thread.is_alive()
    finally:
        window.close()


def test_the_windows_request_goes_before_api_requests_that_wait(tiny_models):
    """Queue fairness: API requests are answered one at a time, and a message the person sends meanwhile is
    answered next, before API requests that were already waiting."""
    window = _Window()
    try:
        url = _serving(window, tiny_models)
        done: dict = {}

        def long_reply() -> None:
            with client() as http:
                body = {**chat_body("the cat and the dog", 1500), "stream": True}
                with http.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
                    done["long"] = [line for line in response.iter_lines() if line.startswith("data: ")]

        first = threading.Thread(target=long_reply)
        first.start()
        serving = window.next(ApiStateChanged, lambda m: m.state.serving).state.serving
        second = threading.Thread(target=lambda: done.update(short=stream_chunks(url, chat_body("the cat", 8))))
        second.start()
        queue = window.loop._side._server.queue  # set-up only: wait until the second request is in line
        deadline = time.monotonic() + DEADLINE_S
        while queue.waiting() < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        window.conn.send(GenerateReply(5, ({"role": "user", "content": "hi"},), GenerationConfig(max_tokens=4)))
        window.api_stopped.value = serving  # the window's Stop ends the long API reply

        order = []
        while "second" not in order or "window" not in order:
            message = window.next(object)
            if isinstance(message, ReplyEnded) and message.request_id == 5:
                order.append("window")
            elif isinstance(message, ApiStateChanged) and message.state.serving > serving:
                order.append("second")
        assert order == ["window", "second"]
        first.join(DEADLINE_S)
        second.join(DEADLINE_S)
        assert "stopped in the SpecChat window" in done["long"][-1] and streamed_text(done["short"])
    finally:
        window.close()
