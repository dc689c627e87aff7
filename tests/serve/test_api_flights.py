"""The API's jobs kept by request id (app.serve.engine.flights), as `serve` and the window both keep them: answers
reach their own job only, the window's Stop is said to a client that is still there, and a death is one error each."""

from __future__ import annotations

import multiprocessing

from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent, GenerationStats, TokenEvent
from app.engine.host.wire import EngineEvents, ReplyEnded, ReplyStarted
from app.engine.targets import LocalModel
from app.engine.host.stops import StopBoard
from app.serve.engine.flights import ApiFlights, death_sentence, restarting
from app.serve.jobs import STOPPED, JobEnded, JobFailed, JobStarted, ServeJob
from app.serve.requests import ChatRequest


def _job(records: list) -> ServeJob:
    return ServeJob(
        ChatRequest(messages=({"role": "user", "content": "hi"},), config=GenerationConfig()), records.append
    )


def _flights() -> ApiFlights:
    return ApiFlights(StopBoard(multiprocessing), StopBoard(multiprocessing))


def test_answers_reach_their_own_job_and_others_are_left_to_the_window(tmp_path):
    flights = _flights()
    first, second = [], []
    flights.add(11, _job(first))
    flights.add(12, _job(second))
    assert flights.on_reply(ReplyStarted(12, LocalModel(tmp_path / "m.gguf"), 3, "hermes"))
    assert flights.on_reply(EngineEvents((FinishedEvent(12, "done", GenerationStats()),)))
    assert flights.on_reply(ReplyEnded(12))
    assert not flights.on_reply(ReplyEnded(5))  # the window's own request: not the API's
    assert not flights.on_reply(EngineEvents((FinishedEvent(5, "mine", GenerationStats()),)))
    assert first == [] and isinstance(second[0], JobStarted) and second[1].text == "done"
    assert isinstance(second[-1], JobEnded) and flights.ids() == [11]


def test_the_windows_stop_is_said_to_its_client_and_reaches_the_engine():
    flights = _flights()
    records: list = []
    flights.add(7, _job(records))
    flights.stop(7)
    assert flights._gone.is_stopped(7)  # what the engine process reads every round
    assert not flights._gone.is_stopped(6)  # a request answered beside it goes on
    flights.on_reply(ReplyEnded(7))
    assert records == [JobFailed(503, STOPPED), JobEnded()]


def test_a_death_is_one_error_with_a_sentence_for_each_job_in_flight():
    flights = _flights()
    first, second = [], []
    flights.add(1, _job(first))
    flights.add(2, _job(second))
    flights.fail_all(500, restarting(death_sentence("killed by SIGKILL", "while answering")))
    sentence = "The engine stopped (killed by SIGKILL) while answering; it is restarting."
    assert first == second == [JobFailed(500, sentence), JobEnded()] and not len(flights)


def test_a_client_that_hangs_up_while_its_long_prompt_is_read_does_not_get_the_engine_replaced(tmp_path, monkeypatch):
    """An agent that gives up on a 20,000-token prompt and asks again reads on from what the engine read: replacing
    the engine because one prompt chunk outlasts the 3 s stop grace would throw that cache away."""
    from app.serve.engine import flights as flights_module

    now = [1000.0]
    monkeypatch.setattr(flights_module.time, "monotonic", lambda: now[0])
    flights = _flights()
    job = _job([])
    flights.add(3, job)
    flights.on_reply(ReplyStarted(3, LocalModel(tmp_path / "m.gguf"), 20000, "hermes"))
    job.cancel.set()
    assert not flights.forward_stops()  # heard: passed on to the engine
    now[0] += flights_module.STOP_GRACE_S + 5  # one chunk of a slow machine's prompt reading
    assert not flights.forward_stops()
    now[0] += flights_module.READING_GRACE_S
    assert flights.forward_stops()  # longer than any chunk: stuck


def test_a_reply_that_writes_must_stop_within_the_grace_after_its_client_goes(tmp_path, monkeypatch):
    from app.serve.engine import flights as flights_module

    now = [1000.0]
    monkeypatch.setattr(flights_module.time, "monotonic", lambda: now[0])
    flights = _flights()
    job = _job([])
    flights.add(4, job)
    flights.on_reply(ReplyStarted(4, LocalModel(tmp_path / "m.gguf"), 30, "hermes"))
    flights.on_reply(EngineEvents((TokenEvent(4, 0, 17, "Hi", "target"),)))
    job.cancel.set()
    assert not flights.forward_stops()
    now[0] += flights_module.STOP_GRACE_S + 1
    assert flights.forward_stops()
