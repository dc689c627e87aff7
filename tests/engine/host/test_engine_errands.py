"""The engine process's errands for the window (app.engine.host.errands), through its loop: each is answered once,
with no model loaded, and carries out what the window no longer does itself."""

from __future__ import annotations

from app.engine.host.wire import (
    ApiHistoryMeasured,
    ChatForgotten,
    DevicesListed,
    ForgetChat,
    ListDevices,
    MeasureApiHistory,
    WorkerReady,
)
from app.engine.speculation.history_file import HistoryFile, history_path
from tests.remote.test_remote_worker_and_cli import _serve  # the loop over a scripted pipe


def test_errands_are_answered_in_order_without_a_model():
    history = HistoryFile()
    history.add("chat-7", "text the deleted chat wrote")
    history.add("chat-8", "text another chat wrote")
    HistoryFile(history_path("api")).add("api", "a request an API client sent")
    sent = _serve([ListDevices(1), ForgetChat(2, "chat-7"), MeasureApiHistory(3), MeasureApiHistory(4, clear=True)])
    assert isinstance(sent[0], WorkerReady)
    devices, forgotten, measured, cleared = sent[1:]
    assert isinstance(devices, DevicesListed) and devices.request_id == 1 and devices.report.known
    assert forgotten == ChatForgotten(2, "chat-7")
    assert [text for _, _, text in history.texts(list(history.ids()))] == ["text another chat wrote"]
    assert isinstance(measured, ApiHistoryMeasured) and measured.request_id == 3 and measured.size_bytes > 0
    assert cleared == ApiHistoryMeasured(4, 0)
