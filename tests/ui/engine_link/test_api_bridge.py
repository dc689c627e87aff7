"""The window's API bridge (app.ui.engine_link.api_bridge): a port in use is one sentence, a message the person
sends goes before the API requests already waiting, and an engine stuck on a gone client's request is replaced."""

from __future__ import annotations

import socket
import threading

import pytest
from PySide6.QtCore import Qt

from app.engine.host.wire import ReplyStarted
from app.serve.engine.flights import STOP_GRACE_S
from app.ui.engine_link.api_bridge import ApiSpec, WindowApi
from app.ui.engine_link.engine_process import EngineProcess
from tests.serve.api_fixtures import DEADLINE_S, chat_body, client, httpx, stream_chunks, stream_events, streamed_text
from tests.ui.window_helpers import api_window


def test_a_port_in_use_is_one_sentence(qtbot):
    engine_process = EngineProcess()  # never started: listening needs no engine
    api = WindowApi(engine_process)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        api.start(ApiSpec(port=port))
    assert not api.state.url and api.state.error == f"Port {port} on 127.0.0.1 is in use; choose another port."
    assert not engine_process.is_running()


@pytest.mark.slow
def test_the_persons_message_goes_before_api_requests_that_wait(make_window, qtbot, model_folder, tiny_models):
    # One request at a time, so API requests wait in line (side by side, tests/ui/engine_link/test_requests_side_by_side.py).
    window = api_window(make_window, qtbot, model_folder, tiny_models, parallel_requests=1)
    control = window.api_server
    url = control.state.url
    done: dict = {"long": []}
    first = threading.Thread(target=stream_events, args=(url, chat_body("the cat and the dog", 1500), done["long"]))
    first.start()
    qtbot.waitUntil(lambda: bool(control.state.serving), timeout=int(DEADLINE_S * 1000))
    serving = control.state.serving
    second = threading.Thread(target=lambda: done.update(short=stream_chunks(url, chat_body("the cat", 8))))
    second.start()
    queue = control.api._server.queue  # set-up only: wait until the second request is in line
    qtbot.waitUntil(lambda: queue.waiting() >= 1, timeout=int(DEADLINE_S * 1000))

    order: list[str] = []  # what the engine process answered, in order
    window.engine_process.sig_generation_ended.connect(lambda _ended: order.append("window"))
    window.engine_process.sig_api_answer.connect(
        lambda answer: (
            order.append("second") if isinstance(answer, ReplyStarted) and answer.request_id > serving else None
        )
    )
    window.composer.edit.setPlainText("hi")
    qtbot.keyClick(window.composer.edit, Qt.Key.Key_Return)  # the person's message, while the API answers
    control.stop_request()  # the footer's Stop ends the long API reply
    qtbot.waitUntil(lambda: "second" in order and "window" in order, timeout=int(DEADLINE_S * 1000))
    assert order.index("window") < order.index("second")
    qtbot.waitUntil(lambda: not first.is_alive() and not second.is_alive(), timeout=int(DEADLINE_S * 1000))
    assert "stopped in the SpecChat window" in done["long"][-1] and streamed_text(done["short"])


@pytest.mark.slow
def test_an_engine_stuck_after_its_api_client_left_is_replaced(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    # A template or llama.cpp call that never returns: once its client has gone and the reply has not ended within
    # STOP_GRACE_S, the window replaces its engine process, and the API answers the next request with the fresh one.
    window = api_window(make_window, qtbot, model_folder, tiny_models, fake_engine=fake_engine, draft=False)
    control = window.api_server
    url, engine = control.state.url, window.engine_process.pid()
    fake_engine.hang_in_chat = True

    def leaves_early() -> None:
        try:
            with httpx.Client(timeout=1.0, trust_env=False) as http:
                http.post(f"{url}/v1/chat/completions", json=chat_body("hi", 4))
        except httpx.TimeoutException:
            pass  # the client gives up and goes away

    leaving = threading.Thread(target=leaves_early)
    with qtbot.waitSignal(window.engine_process.sig_worker_died, timeout=int((DEADLINE_S + STOP_GRACE_S) * 1000)):
        leaving.start()
    fake_engine.hang_in_chat = False
    leaving.join(DEADLINE_S)
    assert window.engine_process.pid() != engine
    answered: dict = {}
    later = threading.Thread(target=lambda: answered.update(chunks=stream_chunks(url, chat_body("hi", 4))))
    later.start()
    qtbot.waitUntil(lambda: not later.is_alive(), timeout=int(DEADLINE_S * 1000))
    assert streamed_text(answered["chunks"])


def test_the_windows_api_refuses_a_grammar_bomb_and_answers_the_next_request(
    make_window, qtbot, model_folder, tiny_models
):
    # A schema that once made llama.cpp's grammar parser recurse until SIGSEGV, in the engine process every chat of
    # the window shares: the window's API refuses it with serve's sentence before any grammar is built.
    from tests.serve.test_api_grammar_limits import LONG_STRING

    window = api_window(make_window, qtbot, model_folder, tiny_models)
    url = window.api_server.state.url
    body = chat_body(
        "JSON please", 8, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": LONG_STRING}}
    )
    result: dict = {}

    def ask() -> None:
        with client() as http:
            result["refused"] = http.post(f"{url}/v1/chat/completions", json=body)
            result["answered"] = http.post(f"{url}/v1/chat/completions", json=chat_body("hi", 4))

    asking = threading.Thread(target=ask)
    asking.start()
    qtbot.waitUntil(lambda: not asking.is_alive(), timeout=int(DEADLINE_S * 2000))
    refused, answered = result["refused"], result["answered"]
    assert refused.status_code == 400 and refused.json()["error"]["message"].startswith(
        "response_format.json_schema.schema.properties.text.maxLength is 100000;"
    )
    assert answered.status_code == 200 and answered.json()["choices"][0]["message"]["content"]
    assert window.engine_process.is_running()
