"""The engine process's errands for the window besides loading and replying: what only this process may touch.

The window never loads llama.cpp (listing devices would start a GPU driver in its process) and never edits the
engine's files (the history drafter's, the saved KV states), so it asks the engine process, which answers each
request with one record. Every errand answers, whatever happens: a failure is printed to the engine's log and the
answer says as little as it knows.
"""

from __future__ import annotations

import traceback
from typing import Union

from app.engine.host.wire import (
    ApiHistoryMeasured,
    ChatForgotten,
    DevicesListed,
    ForgetChat,
    ListDevices,
    MeasureApiHistory,
)
from app.engine.placement.devices import DeviceReport, list_devices

Errand = Union[ListDevices, ForgetChat, MeasureApiHistory]
ErrandAnswer = Union[DevicesListed, ChatForgotten, ApiHistoryMeasured]


def run_errand(errand: Errand) -> ErrandAnswer:
    """Carry out `errand` on the engine process's thread and return its answer; never raises."""
    match errand:
        case ListDevices():
            try:
                return DevicesListed(errand.request_id, list_devices())
            except Exception as exc:  # list_devices never raises; this guards the pickling of its answer too
                return DevicesListed(errand.request_id, DeviceReport(problem=f"listing the devices failed ({exc})"))
        case ForgetChat():
            _forget_chat(errand.session)
            return ChatForgotten(errand.request_id, errand.session)
        case MeasureApiHistory():
            return ApiHistoryMeasured(errand.request_id, _api_history(errand.clear))


def _forget_chat(session: str) -> None:
    from app.engine.local.kv_states.saved_states import forget_saved_states
    from app.engine.speculation.history_file import HistoryFile

    try:
        HistoryFile().forget(session)  # its text leaves the history drafter's file
        forget_saved_states(session)  # and its KV cache saved on disk
    except Exception:  # a damaged file must not take the engine down; the chat itself is gone already
        traceback.print_exc()


def _api_history(clear: bool) -> int:
    from app.engine.speculation.history_file import api_history_size, clear_api_history

    try:
        if clear:
            clear_api_history()
        return api_history_size()
    except OSError:
        traceback.print_exc()
        return 0
