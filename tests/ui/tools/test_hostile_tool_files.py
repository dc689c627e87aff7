"""A FIFO or a device chosen as the mcp.json (Settings > Tools) is one sentence on
the Tools page; the window starts and stays usable, never waiting on the FIFO nor reading the device without
end. (Issue 44, class 6, in the window.)"""

from __future__ import annotations

import os
import threading

import pytest

DEADLINE_S = 60  # then the FIFO gets a writer, so a window waiting on it starts (and the test fails) instead of hanging


def _unblock_later(path, stop: threading.Event) -> None:
    if not stop.wait(DEADLINE_S):
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # no reader waits: nothing to unblock
            pass


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_a_fifo_or_a_device_as_the_tool_file_is_one_sentence(make_window, qtbot, tmp_path, kind):
    path = tmp_path / "mcp.json"
    stop = threading.Event()
    if kind == "fifo":
        os.mkfifo(path)
        threading.Thread(target=_unblock_later, args=(path, stop), daemon=True).start()
    else:
        path = kind
    try:
        window = make_window(mcp_file=str(path))  # read at start: a FIFO would hold the window's start forever
    finally:
        stop.set()
    said = " ".join(window.tools.servers.problems)
    assert said == (
        f"{path} is a pipe (FIFO), not a regular file."
        if kind == "fifo"
        else f"{path} is a device, not a regular file."
    )
    assert window.tools.servers.tools() == ()
