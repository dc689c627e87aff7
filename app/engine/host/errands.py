"""The engine process's errands for the window besides loading and replying: what only this process may touch.

The window never loads llama.cpp (listing devices would start a GPU driver in its process; counting a picture's
tokens needs the target's projector) and never edits the engine's files (the history drafter's, the saved KV states), so it asks the engine process, which answers each
request with one record. Errands wait while replies run, so they never hold one up. Every errand answers, whatever happens: a failure is printed to the engine's log and the
answer says as little as it knows.
"""

from __future__ import annotations

import traceback
from typing import Optional, Union

from app.engine.host.wire import (
    ApiHistoryMeasured,
    ChatForgotten,
    CountPicture,
    DevicesListed,
    ForgetChat,
    ListDevices,
    MeasureApiHistory,
    PictureCounted,
)
from app.engine.placement.devices import DeviceReport, list_devices

Errand = Union[ListDevices, ForgetChat, MeasureApiHistory, CountPicture]
ErrandAnswer = Union[DevicesListed, ChatForgotten, ApiHistoryMeasured, PictureCounted]


def run_errand(errand: Errand, engine: Optional[object] = None) -> ErrandAnswer:
    """Carry out `errand` on the engine process's thread (with the `engine` it holds, if any) and return its
    answer; never raises."""
    match errand:
        case CountPicture():
            return PictureCounted(errand.request_id, errand.image.digest, _picture_tokens(engine, errand))
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


def _picture_tokens(engine: Optional[object], errand: CountPicture) -> Optional[int]:
    count = getattr(engine, "picture_tokens", None)  # a local engine's (through the factory): it holds the projector
    if count is None:
        return None
    try:
        return count(errand.image)
    except Exception:  # a count is a courtesy: the chip says "about" instead, and sending says what is wrong
        traceback.print_exc()
        return None
