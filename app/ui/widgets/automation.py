"""Driving the real window from code, for the screenshot script and the self-test (tests use pytest-qt instead).

Each helper keeps the event loop running while it waits, so the window behaves exactly as it does for a person.
GUI thread only.
"""

from __future__ import annotations

import time
from typing import Callable, Optional

from PySide6.QtWidgets import QApplication

from app.engine.targets import Target


class AutomationTimeout(RuntimeError):
    """What the helper waited for did not happen in time."""


def wait_until(predicate: Callable[[], bool], timeout_s: float, what: str, window=None) -> None:
    """Run the event loop until `predicate()`; a message the window shows meanwhile ends the wait as an error."""
    end = time.monotonic() + timeout_s
    while not predicate():
        if window is not None and window.error_banner.isVisible():
            raise RuntimeError(f"while waiting for {what}, the window said: {window.error_banner.text()}")
        if time.monotonic() > end:
            raise AutomationTimeout(f"timed out after {timeout_s:.0f} s waiting for {what}")
        QApplication.processEvents()
        time.sleep(0.005)


def choose_pair(window, target: str | Target, draft: Optional[str], timeout_s: float = 300) -> None:
    """Pick the target (and the draft, or the best suggestion when None) and wait until they are loaded."""
    wait_until(window.library_ready, timeout_s, "the model library scan", window)
    entry = window.library.entry_for(target)
    if entry is None or not entry.usable:
        raise RuntimeError(f"{target} is not usable: {entry.problem if entry else 'not in the library'}")
    window.choose_target(target)
    wait_until(lambda: not window.drafts.is_checking(), timeout_s, "the draft compatibility check", window)
    if draft is not None:
        if window.drafts.row_of(draft) < 0:
            raise RuntimeError(f"{draft} is not offered as a draft for {target}")
        window.choose_draft(draft)
    wait_until(window.models_ready, timeout_s, "the models to load", window)


def send_and_wait(window, text: str, timeout_s: float = 600) -> int:
    """Send `text` as the user would and wait for the stored reply; returns its message id."""
    finished: list[int] = []
    window.conversation.sig_reply_finished.connect(finished.append)
    try:
        window.composer.set_text(text)
        if not window.send_message(window.composer.text()):
            raise RuntimeError(window.error_banner.text() or "the message could not be sent")
        wait_until(lambda: bool(finished), timeout_s, "the reply", window)
    finally:
        window.conversation.sig_reply_finished.disconnect(finished.append)
    return finished[0]
