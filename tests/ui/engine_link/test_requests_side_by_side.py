"""Settings' "Requests at once": the person's message in the window is answered beside the API's clients, never
queued behind them, and the footer's Stop ends the API's requests only."""

from __future__ import annotations

import socket
import threading

import pytest

from tests.serve.api_fixtures import DEADLINE_S, chat_body, client
from tests.ui.window_helpers import choose_pair, send_and_wait


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_message_is_answered_while_two_api_clients_are_being_answered(make_window, qtbot, model_folder, tiny_models):
    window = make_window(api_server=True, api_port=_free_port(), parallel_requests=3, context_size=4096)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    control = window.api_server
    qtbot.waitUntil(lambda: bool(control.state.url), timeout=int(DEADLINE_S * 1000))
    window.update_chat_settings(max_tokens=24)
    url = control.state.url

    streams: dict[int, list[str]] = {0: [], 1: []}
    ended: dict[int, bool] = {}

    def api_client(i: int) -> None:
        body = {**chat_body(f"client {i}: the cat and the dog", 4000), "ignore_eos": True, "stream": True}
        with client() as http:
            with http.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
                for line in response.iter_lines():
                    if line.startswith("data: "):
                        streams[i].append(line)
        ended[i] = True

    threads = [threading.Thread(target=api_client, args=(i,), daemon=True) for i in (0, 1)]
    for thread in threads:
        thread.start()
    qtbot.waitUntil(lambda: all(len(lines) >= 2 for lines in streams.values()), timeout=int(DEADLINE_S * 1000))

    send_and_wait(qtbot, window, "hello there")  # answered beside them: its reply ends while they still stream
    assert not ended, "the person's reply waited until an API client's reply had ended"
    reply = window.conversation.prompt_messages("")[-1]
    assert reply["role"] == "assistant" and reply["content"]

    window.api_server.stop_request()  # the footer's Stop: both API requests end, each told why
    qtbot.waitUntil(lambda: not any(thread.is_alive() for thread in threads), timeout=int(DEADLINE_S * 1000))
    for lines in streams.values():
        assert "stopped in the SpecChat window" in lines[-1]


@pytest.mark.slow
def test_api_requests_with_stop_strings_are_answered_beside_others(make_window, qtbot, model_folder, tiny_models):
    window = make_window(api_server=True, api_port=_free_port(), parallel_requests=3, context_size=2048)
    choose_pair(qtbot, window, model_folder / tiny_models.target.name, model_folder / tiny_models.draft.name)
    control = window.api_server
    qtbot.waitUntil(lambda: bool(control.state.url), timeout=int(DEADLINE_S * 1000))
    url = control.state.url
    bodies = [
        chat_body("one two three", 32, temperature=0, stop=[" ", "e"]),
        chat_body("the cat and the dog", 32, temperature=0),
    ]
    answers: dict[int, tuple[int, str]] = {}

    def api_client(i: int) -> None:
        with client() as http:
            response = http.post(f"{url}/v1/chat/completions", json=bodies[i])
        reason = response.json()["choices"][0]["finish_reason"] if response.status_code == 200 else response.text
        answers[i] = (response.status_code, reason)

    threads = [threading.Thread(target=api_client, args=(i,), daemon=True) for i in (0, 1)]
    for thread in threads:
        thread.start()
    qtbot.waitUntil(lambda: len(answers) == 2, timeout=int(DEADLINE_S * 1000))  # a stop string held both for ever
    assert answers == {0: (200, "stop"), 1: (200, "length")}
