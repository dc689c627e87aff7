"""API requests in the engine process's loop (AnswerChat, as the window's API and `serve` send them): answered with
the models the window loaded, between the window's own requests, each kind stopped by its own "up to" integer."""

from __future__ import annotations

import multiprocessing
import threading

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import FinishedEvent, TokenEvent
from app.engine.host.wire import (
    AnswerChat,
    EngineEvents,
    GenerateReply,
    LoadModels,
    ModelsLoaded,
    ReplyEnded,
    ReplyFailed,
    ReplyStarted,
    Shutdown,
    WorkerReady,
)
from app.engine.host.stops import StopBoard
from app.engine.host.worker import _WorkerLoop, default_engine_factory
from app.engine.targets import LocalModel
from tests.serve.api_fixtures import DEADLINE_S


class _Window:
    """The window's end of the pipe: sends requests, and reads replies with a deadline."""

    def __init__(self):
        self.conn, worker_conn = multiprocessing.Pipe()
        self.cancelled = multiprocessing.RawValue("q", 0)
        self.api_stopped = StopBoard(multiprocessing)
        self.enough = StopBoard(multiprocessing)
        self.loop = _WorkerLoop(worker_conn, self.cancelled, default_engine_factory, self.api_stopped, self.enough)
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


HI = ({"role": "user", "content": "hi"},)


def _loaded(window: _Window, tiny_models, parallel: int = 1) -> ModelsLoaded:
    window.conn.send(
        LoadModels(
            1,
            LocalModel(tiny_models.target),
            tiny_models.draft,
            LoadSettings(n_ctx=2048, n_threads=1, n_parallel=parallel),
        )
    )
    return window.next(ModelsLoaded)


def _answer(window: _Window, request_id: int) -> list:
    """Every message of one request's answer, up to its ReplyEnded."""
    messages = []
    while True:
        message = window.next(object)
        messages.append(message)
        if isinstance(message, ReplyEnded) and message.request_id == request_id:
            return messages


def _finished(messages: list) -> bool:
    return any(
        isinstance(event, FinishedEvent)
        for message in messages
        if isinstance(message, EngineEvents)
        for event in message.events
    )


def test_the_windows_stop_and_the_apis_never_stop_each_others_requests(tiny_models):
    # The window numbers its requests and the API numbers its own: through one "up to" integer, the window's Stop
    # for its request 7 would stop the API's request 2, and the API's Stop for its request 9 the window's 8.
    window = _Window()
    try:
        _loaded(window, tiny_models)
        window.cancelled.value = 7  # the window's Stop for its reply 7
        window.conn.send(AnswerChat(2, HI, GenerationConfig(max_tokens=4)))
        answer = _answer(window, 2)
        assert isinstance(answer[0], ReplyStarted) and _finished(answer)

        window.api_stopped.stop(9)  # a client of the API went away from its request 9
        window.conn.send(GenerateReply(8, HI, GenerationConfig(max_tokens=4)))
        assert _finished(_answer(window, 8))

        window.api_stopped.stop(8)
        window.conn.send(AnswerChat(8, HI, GenerationConfig(max_tokens=4)))  # its own Stop still stops it
        assert not _finished(_answer(window, 8))
    finally:
        window.close()


def test_a_template_out_of_budget_ends_only_its_request_in_the_engine_process(tiny_models, monkeypatch):
    from app.engine.local import chat_format

    window = _Window()
    try:
        _loaded(window, tiny_models)
        # Budgets so small that even ChatML, the fallback, runs out (what 40,000 messages once did): the API's
        # client and the window each get a sentence, and the engine process goes on.
        monkeypatch.setattr(chat_format, "BASE_STEPS", 3)
        monkeypatch.setattr(chat_format, "STEPS_PER_MESSAGE", 0)
        window.conn.send(AnswerChat(1, HI, GenerationConfig(max_tokens=4)))
        refused = window.next(ReplyFailed)
        assert refused.status == 400 and "could not be formatted" in refused.message
        assert window.next(ReplyEnded).request_id == 1
        window.conn.send(GenerateReply(2, ({"role": "user", "content": "hi"},), GenerationConfig(max_tokens=4)))
        failed = window.next(ReplyFailed)
        assert failed.request_id == 2 and "could not be formatted" in failed.message
        assert window.next(ReplyEnded).request_id == 2
        monkeypatch.undo()

        window.conn.send(AnswerChat(4, HI, GenerationConfig(max_tokens=4)))
        assert _finished(_answer(window, 4))
        window.conn.send(GenerateReply(3, ({"role": "user", "content": "hi"},), GenerationConfig(max_tokens=4)))
        assert window.next(ReplyEnded).request_id == 3
        assert window.thread.is_alive()
    finally:
        window.close()


def _texts(messages: list) -> dict[int, str]:
    """Each request's finished text, by request id."""
    return {
        event.request_id: event.text
        for message in messages
        if isinstance(message, EngineEvents)
        for event in message.events
        if isinstance(event, FinishedEvent)
    }


def _until_ended(window: _Window, ids: set[int]) -> list:
    messages = []
    while ids:
        message = window.next(object)
        messages.append(message)
        if isinstance(message, ReplyEnded):
            ids.discard(message.request_id)
    return messages


LONG = GenerationConfig(max_tokens=40, ignore_eos=True)
ASKS = {
    11: ({"role": "user", "content": "count with me: 1, 2, 3"},),
    12: ({"role": "user", "content": "def fibonacci(n):"},),
}


def test_requests_sent_together_are_answered_side_by_side_each_as_alone(tiny_models):
    window = _Window()
    try:
        _loaded(window, tiny_models)
        alone = {}
        for request_id, messages in ASKS.items():
            window.conn.send(AnswerChat(request_id, messages, LONG))
            alone.update(_texts(_answer(window, request_id)))
        loaded = _loaded(window, tiny_models, parallel=2)
        assert loaded.parallel == 2
        for request_id, messages in ASKS.items():
            window.conn.send(AnswerChat(request_id + 10, messages, LONG))
        messages = _until_ended(window, {21, 22})
        together = _texts(messages)
        assert together == {21: alone[11], 22: alone[12]}
        # Side by side: the second request's first tokens came before the first request ended.
        order = [
            event.request_id
            for message in messages
            if isinstance(message, EngineEvents)
            for event in message.events
            if isinstance(event, (TokenEvent, FinishedEvent))
        ]
        assert order.index(22) < max(i for i, request_id in enumerate(order) if request_id == 21)
    finally:
        window.close()


def test_a_client_leaving_ends_its_answer_only(tiny_models):
    window = _Window()
    try:
        _loaded(window, tiny_models, parallel=2)
        window.conn.send(AnswerChat(31, ASKS[11], LONG))
        window.conn.send(AnswerChat(32, ASKS[12], LONG))
        window.next(EngineEvents, lambda message: any(e.request_id == 32 for e in message.events))
        window.api_stopped.stop(32)  # the newer one: an "up to" integer would have stopped 31 too
        messages = _until_ended(window, {31, 32})
        texts = _texts(messages)
        assert 32 not in texts and 31 in texts
        finished = [
            event
            for message in messages
            if isinstance(message, EngineEvents)
            for event in message.events
            if isinstance(event, FinishedEvent)
        ]
        assert finished[0].stats.tokens == 40
    finally:
        window.close()
