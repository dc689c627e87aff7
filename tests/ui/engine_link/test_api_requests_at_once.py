"""Requests at once where API callers look for it, and a request waiting for its turn said in the footer (issue 55,
item 1): with one request at a time, an API request sent during a long reply waited without a word."""

from __future__ import annotations

import threading

import pytest

from app.store import AppSettings
from app.ui.settings.dialog import AppSettingsDialog
from tests.serve.api_fixtures import DEADLINE_S, chat_body, stream_chunks, stream_events
from tests.ui.window_helpers import api_window


def test_the_api_page_shows_requests_at_once_in_step_with_the_loading_page(qtbot):
    dialog = AppSettingsDialog(AppSettings(parallel_requests=1))
    qtbot.addWidget(dialog)
    on_api_page = dialog.api_page.requests_at_once
    assert on_api_page is not None and on_api_page.value() == 1
    on_api_page.setValue(3)  # changed where API callers look
    assert dialog.requests_at_once.value() == 3 and dialog.settings().parallel_requests == 3
    dialog.requests_at_once.box.setValue(2)  # and where it was before
    assert on_api_page.value() == 2


@pytest.mark.slow
def test_the_footer_counts_an_api_request_waiting_for_its_turn(make_window, qtbot, model_folder, tiny_models):
    window = api_window(make_window, qtbot, model_folder, tiny_models, parallel_requests=1)  # one at a time
    control = window.api_server
    url, deadline = control.state.url, int(DEADLINE_S * 1000)
    done: dict = {"long": []}
    first = threading.Thread(target=stream_events, args=(url, chat_body("the cat and the dog", 1500), done["long"]))
    first.start()
    qtbot.waitUntil(lambda: bool(control.state.serving), timeout=deadline)
    second = threading.Thread(target=lambda: done.update(short=stream_chunks(url, chat_body("the cat", 8))))
    second.start()
    qtbot.waitUntil(lambda: "1 API request waiting" in control.indicator.text(), timeout=deadline)
    assert "Requests at once" in control.indicator.toolTip()
    control.stop_request()  # the long reply ends; the waiting one gets its turn
    qtbot.waitUntil(lambda: not first.is_alive() and not second.is_alive(), timeout=deadline)
    qtbot.waitUntil(lambda: "waiting" not in control.indicator.text(), timeout=deadline)
    assert done["short"]
