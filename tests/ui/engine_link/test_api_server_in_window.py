"""The window's API switch: the loaded pair answers other programs, the footer says when it is answering one, its
Stop ends that request, and switching it off stops listening."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import threading

import pytest

from app.ui.settings.api_server_page import ApiServerChoice
from tests.serve.api_fixtures import DEADLINE_S, chat_body, client, stream_chunks, stream_events, streamed_tokens
from tests.ui.window_helpers import api_window, choose_pair


def test_the_window_serves_its_models_and_stops_a_request(make_window, qtbot, model_folder, tiny_models):
    window = api_window(make_window, qtbot, model_folder, tiny_models)
    control = window.api_server
    assert control.indicator.text() == (
        f"<a href='#page'>API at {control.state.url.split('://')[1]}</a> · answers with tiny-target"
    )

    done: dict = {}
    short = threading.Thread(
        target=lambda: done.update(short=stream_chunks(control.state.url, chat_body("the cat", 20)))
    )
    short.start()
    qtbot.waitUntil(lambda: not short.is_alive(), timeout=int(DEADLINE_S * 1000))
    assert {t["drafter"] for t in streamed_tokens(done["short"])} <= {"model", "ngram", None}
    assert len(streamed_tokens(done["short"])) == 20
    # The client has its reply before the window hears the request is answered: until then the footer still offers
    # Stop for the short request, and a Stop for it would not stop the long one.
    qtbot.waitUntil(lambda: "API at" in control.indicator.text(), timeout=int(DEADLINE_S * 1000))
    # The footer's tooltip (and the API page) says what drafting gave that request, as serve's log does.
    kept = sum(t["drafter"] is not None for t in streamed_tokens(done["short"]))
    said = control.indicator.toolTip()
    assert re.search(rf"Last request: ({kept} of \d+ drafted tokens kept|no drafts)\b", said), said

    done["long"] = []
    long = threading.Thread(
        target=stream_events, args=(control.state.url, chat_body("the cat and the dog", 1500), done["long"])
    )
    long.start()
    qtbot.waitUntil(lambda: "answering a request" in control.indicator.text(), timeout=int(DEADLINE_S * 1000))
    # Its first event is out (a Stop before the engine starts it is a 503 "cancelled before it started").
    qtbot.waitUntil(lambda: bool(done["long"]), timeout=int(DEADLINE_S * 1000))
    control.indicator.linkActivated.emit("#stop")  # the footer's Stop link
    qtbot.waitUntil(lambda: not long.is_alive(), timeout=int(DEADLINE_S * 1000))
    assert "stopped in the SpecChat window" in done["long"][-1]
    qtbot.waitUntil(lambda: "API at" in control.indicator.text(), timeout=int(DEADLINE_S * 1000))

    url = control.state.url
    control.set_choice(ApiServerChoice(False, "127.0.0.1", window.settings.api_port, None))
    qtbot.waitUntil(lambda: not control.state.url, timeout=int(DEADLINE_S * 1000))
    assert window.settings.api_server is False and control.indicator.text() == "<a href='#page'>API server</a>"
    with socket.socket() as sock:  # nothing listens there any more
        assert sock.connect_ex(("127.0.0.1", int(url.rsplit(":", 1)[1]))) != 0


def test_the_page_warns_and_refuses_what_cannot_work(qtbot):
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QDialogButtonBox

    from app.ui.settings.api_server_page import ApiServerDialog

    dialog = ApiServerDialog(ApiServerChoice(True, "127.0.0.1", 1234, None), "Off.")
    qtbot.addWidget(dialog)
    page = dialog.page
    ok = dialog.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Ok)
    assert page.base_url.text().startswith("Base URL for clients: http://127.0.0.1:1234/v1 ")
    assert not page.warning.text()
    page.host.setText("0.0.0.0")
    assert "set an API key" in page.warning.text()
    page.api_key.setText("two words")
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    assert dialog.result() != dialog.DialogCode.Accepted and "without spaces" in dialog.error.text()
    page.api_key.setText("k3y")
    assert page.warning.text() == "Other machines can reach this address."
    qtbot.mouseClick(ok, Qt.MouseButton.LeftButton)
    assert dialog.result() == dialog.DialogCode.Accepted
    assert page.choice() == ApiServerChoice(True, "0.0.0.0", 1234, "k3y")


def test_the_page_refuses_an_address_with_shell_characters(qtbot):
    from app.ui.settings.api_server_page import ApiServerDialog

    dialog = ApiServerDialog(ApiServerChoice(True, "127.0.0.1", 1234, None), "Off.")
    qtbot.addWidget(dialog)
    dialog.page.host.setText("127.0.0.1;reboot")
    assert dialog.page.problem() == "The address must be a host name or an IP address, such as 127.0.0.1."
    dialog.page.host.setText("gpu-box.lan")
    assert dialog.page.problem() is None


def test_a_saved_port_out_of_range_falls_back_with_a_warning(tmp_path):
    from app.store.settings import load_settings

    path = tmp_path / "settings.json"
    path.write_text('{"api_server": true, "api_port": 70000}')
    settings = load_settings(path)
    assert settings.api_server and settings.api_port == 1234 and "api_port" in settings.load_warning


def _ask(url: str, outcome: dict, name: str) -> None:
    """A plain (not streamed) chat request; what it got lands in outcome[name]: (status, body), or the error's
    type when the connection dropped."""
    try:
        with client() as http:
            answer = http.post(f"{url}/v1/chat/completions", json=chat_body("hi", 4))
        outcome[name] = (answer.status_code, answer.json())
    except Exception as exc:  # what the client sees when the process on the other end dies
        outcome[name] = (type(exc).__name__, None)


@pytest.mark.slow
def test_an_api_request_that_kills_the_engine_gets_a_sentence_and_the_api_keeps_listening(
    make_window, qtbot, fake_engine, model_folder, tiny_models
):
    # The API's HTTP side runs in the window's process, so what kills the engine (llama.cpp's abort, SIGILL) costs
    # its client one error with a sentence, and the server never stops listening.
    window = api_window(make_window, qtbot, model_folder, tiny_models, fake_engine=fake_engine, draft=False)
    target = model_folder / tiny_models.target.name
    control = window.api_server
    url = control.state.url
    outcome: dict = {}

    fake_engine.illegal_instruction_in_chat = True
    with qtbot.waitSignal(window.engine_process.sig_worker_died, timeout=int(DEADLINE_S * 1000)):
        threading.Thread(target=_ask, args=(url, outcome, "killing")).start()
    qtbot.waitUntil(lambda: "killing" in outcome, timeout=int(DEADLINE_S * 1000))
    status, body = outcome["killing"]
    assert status == 500 and body["error"]["message"] == (
        "The engine stopped (killed by SIGILL) while answering; it is restarting."
    )
    fake_engine.illegal_instruction_in_chat = False
    assert control.state.url == url and not control.state.serving

    waiting = threading.Thread(target=_ask, args=(url, outcome, "after"))
    waiting.start()
    qtbot.waitUntil(lambda: not waiting.is_alive(), timeout=int(DEADLINE_S * 1000))
    # The crash was the build's fault (SIGILL): the window does not load the models again only to crash again, so
    # the API says no model is loaded until the person loads one.
    status, body = outcome["after"]
    assert status == 503 and "No model is loaded" in body["error"]["message"]
    choose_pair(qtbot, window, target, None)
    again = threading.Thread(target=_ask, args=(url, outcome, "reloaded"))
    again.start()
    qtbot.waitUntil(lambda: not again.is_alive(), timeout=int(DEADLINE_S * 1000))
    status, body = outcome["reloaded"]
    assert status == 200 and body["choices"][0]["message"]["content"]


def test_an_engine_killed_mid_reply_costs_the_api_client_one_error_and_the_api_answers_again(
    make_window, qtbot, model_folder, tiny_models
):
    window = api_window(make_window, qtbot, model_folder, tiny_models)
    control = window.api_server
    url = control.state.url
    engine = window.engine_process.pid()
    done: dict = {"events": []}
    streaming = threading.Thread(
        target=stream_events, args=(url, chat_body("the cat and the dog", 3000), done["events"], done)
    )
    streaming.start()
    qtbot.waitUntil(lambda: len(done["events"]) >= 2, timeout=int(DEADLINE_S * 1000))  # its first token is out
    with qtbot.waitSignal(window.engine_process.sig_worker_died, timeout=int(DEADLINE_S * 1000)):
        os.kill(engine, signal.SIGKILL)
    qtbot.waitUntil(lambda: not streaming.is_alive(), timeout=int(DEADLINE_S * 1000))
    errors = [json.loads(event)["error"] for event in done["events"] if '"error"' in event]
    assert done["status"] == 200 and errors == [
        {
            "message": "The engine stopped (killed by SIGKILL) while answering; it is restarting.",
            "type": "server_error",
            "code": 500,
        }
    ]
    assert "[DONE]" not in done["events"] and control.state.url == url

    # The window loads its models into the fresh engine, and the API answers with them.
    outcome: dict = {}
    later = threading.Thread(target=_ask, args=(url, outcome, "later"))
    later.start()
    qtbot.waitUntil(lambda: not later.is_alive(), timeout=int(DEADLINE_S * 1000))
    status, body = outcome["later"]
    assert status == 200 and body["choices"][0]["message"]["content"], body
    assert window.engine_process.pid() != engine
    with client() as http:  # what the fresh engine loaded is listed again
        assert [m["id"] for m in http.get(f"{url}/v1/models").json()["data"]] == ["tiny-target"]


def _answer_settings_with_the_api_switch(monkeypatch, on: bool) -> None:
    """The next Settings dialog opened is accepted with its API server switch `on` (or off), as a user ticks it."""
    from PySide6.QtWidgets import QDialog

    from app.ui.settings.dialog import AppSettingsDialog

    def tick_and_accept(dialog) -> QDialog.DialogCode:
        dialog.api_page.enabled.setChecked(on)
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(AppSettingsDialog, "exec", tick_and_accept)


def test_the_settings_switch_starts_and_stops_the_api_server(make_window, qtbot, fake_engine, monkeypatch):
    """Settings › API server applies its switch as the footer's page does: ticked, the port answers; unticked,
    nothing listens there and the footer says so."""
    from tests.support.ports import free_port

    port = free_port()
    window = make_window(engine_factory=fake_engine, api_server=False, api_port=port)
    control = window.api_server
    _answer_settings_with_the_api_switch(monkeypatch, True)
    window.open_app_settings()
    qtbot.waitUntil(lambda: bool(control.state.url), timeout=int(DEADLINE_S * 1000))
    assert window.settings.api_server is True
    with socket.socket() as sock:
        assert sock.connect_ex(("127.0.0.1", port)) == 0

    _answer_settings_with_the_api_switch(monkeypatch, False)
    window.open_app_settings()
    qtbot.waitUntil(lambda: not control.state.url, timeout=int(DEADLINE_S * 1000))
    assert window.settings.api_server is False and control.indicator.text() == "<a href='#page'>API server</a>"
    with socket.socket() as sock:  # nothing listens there any more
        assert sock.connect_ex(("127.0.0.1", port)) != 0
