"""The API's jobs kept by request id (app.serve.engine.flights), as `serve` and the window both keep them: answers
reach their own job only, the window's Stop is said to a client that is still there, and a death is one error each."""

from __future__ import annotations

import multiprocessing

from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent, GenerationStats
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
