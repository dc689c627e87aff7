"""Saves replies on a thread of its own, so that storing a long reply never holds up the window.

A 2 MB reply takes 40-70 ms to store (its text, its token record and its search index, then a synced commit);
on the window's thread that was one stall of that length as the reply ended (issue 23, docs/performance.md). The
saver has its own connection to the same database (SQLite connections belong to one thread; WAL lets the window
read meanwhile). Saves run one at a time in the order they were asked for, and their answers come back to the
GUI thread in that order.

Rule: whoever reads or writes the chat after a reply ends (a new message, Regenerate, another chat) calls drain()
first; Conversation.stop() does, so every path that replaces the streaming reply does. drain() waits for the saves
asked for and delivers their answers at once.
GUI thread only, except the saver's thread, which only runs the saves.
"""

from __future__ import annotations

import queue
import threading
import time
from collections import deque
from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QObject, Signal

from app.store import ChatStore, Message, NotFoundError
from app.store.provenance import token_columns
from app.ui.chat.reply_request import ReplyRequest, ReplySave

DRAIN_TIMEOUT_S = 60.0  # longer than SQLite's wait for a lock another program holds
# A streaming reply is saved (marked interrupted) at least this often, so a killed app loses at most this much of it.
SAVE_INTERVAL_S = 1.0
SAVE_EVERY_TOKENS = 64
SAVE_COST_SHARE = 10  # a save while streaming waits at least this many times as long as the last one took


class ReplySaver(QObject):
    """Stores replies off the GUI thread, in order."""

    _sig_saved = Signal()
    """A save ended (from the saver's thread): deliver what is ready."""

    def __init__(self, path: Path, parent: Optional[QObject] = None):
        super().__init__(parent)
        self._path = path
        self._queue: queue.SimpleQueue[Optional[ReplySave]] = queue.SimpleQueue()
        self._asked: deque[ReplySave] = deque()  # GUI thread: saves whose answers are not delivered yet
        self._thread: Optional[threading.Thread] = None
        self._closed = False
        # The writer's thread only:
        self._store: Optional[ChatStore] = None
        self._ids: dict[int, int] = {}  # request id -> the message its first save created
        self._sig_saved.connect(self._deliver_ready)

    def save(self, job: ReplySave) -> None:
        """Store `job` after every save asked for before it; its callback runs on the GUI thread."""
        if self._closed:
            job.on_failed(RuntimeError("the window is closing"))
            return
        self._asked.append(job)
        if self._thread is None:
            self._thread = threading.Thread(target=self._serve, name="SpecChat reply saver", daemon=True)
            self._thread.start()
        self._queue.put(job)

    def save_if_due(self, request: ReplyRequest, on_failed: Callable[[BaseException], None]) -> None:
        """Save the streaming reply `request`, marked interrupted, when it is due, so that a killed app keeps all but
        its last second."""
        now = time.monotonic()
        written = len(request.tokens) + len(request.reasoning)
        if now - request.saved_at < SAVE_INTERVAL_S and written - request.saved_tokens < SAVE_EVERY_TOKENS:
            return
        # Saves run on the saver's thread, but on the CPUs the model decodes on: while streaming they take at most
        # a tenth of the time, and one at a time.
        if now - request.saved_at < SAVE_COST_SHARE * request.save_cost_s or self.saving(request.request_id):
            return
        request.saved_tokens = written
        request.saved_at = now

        def saved(_stored: Optional[Message], seconds: float) -> None:
            request.save_cost_s = seconds

        self.save(
            request.save_job(
                request.partial_stats("interrupted"),
                request.reply_text(),
                final=False,
                on_done=saved,
                on_failed=on_failed,
            )
        )

    def saving(self, request_id: int) -> bool:
        """Whether a save of this request has not answered yet."""
        return any(job.request_id == request_id for job in self._asked)

    def drain(self, timeout_s: float = DRAIN_TIMEOUT_S) -> None:
        """Wait for every save asked for, and deliver their answers now, in order."""
        for job in list(self._asked):
            job.done.wait(timeout_s)
        self._deliver_ready()

    def close(self) -> None:
        """Finish the saves asked for, then end the thread and its connection. Safe twice."""
        if self._closed:
            return
        self.drain()
        self._closed = True
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(DRAIN_TIMEOUT_S)

    def _deliver_ready(self) -> None:
        while self._asked and self._asked[0].done.is_set():
            job = self._asked.popleft()
            if job.delivered:
                continue
            job.delivered = True
            if job.error is None and job.result is not None:
                job.on_done(*job.result)
            else:
                job.on_failed(job.error or RuntimeError("the save ended without a result"))

    # -- the saver's thread ----------------------------------------------------------------------------------

    def _serve(self) -> None:
        while True:
            job = self._queue.get()
            if job is None:
                break
            try:
                job.result = self._write(job)
            except Exception as exc:  # handed to the GUI thread, which says it
                job.error = exc
            job.done.set()
            try:
                self._sig_saved.emit()
            except RuntimeError:
                pass  # the window was deleted meanwhile
        if self._store is not None:
            self._store.close()

    def _write(self, job: ReplySave) -> tuple[Optional[Message], float]:
        started = time.perf_counter()
        if self._store is None:
            self._store = ChatStore(self._path, check_pages=False)
        store = self._store
        message_id = self._ids.get(job.request_id, job.message_id)
        # The store keeps each part's tokens as two columns: (text, origin) pairs and their rounds.
        tokens, token_rounds = token_columns(job.tokens)
        reasoning_tokens, reasoning_token_rounds = (
            token_columns(job.reasoning_tokens) if job.reasoning_tokens else (None, None)
        )
        stored: Optional[Message]
        try:
            if message_id is None:
                stored = store.add_message(
                    job.chat_id,
                    "assistant",
                    job.content,
                    stats=job.stats,
                    target_name=job.target_name,
                    draft_name=job.draft_name,
                    tokens=tokens,
                    token_rounds=token_rounds,
                    rounds=job.rounds,
                    reasoning=job.reasoning,
                    reasoning_tokens=reasoning_tokens,
                    reasoning_token_rounds=reasoning_token_rounds,
                )
                self._ids[job.request_id] = stored.id
            else:
                store.update_reply(
                    message_id,
                    job.content,
                    stats=job.stats,
                    tokens=tokens,
                    token_rounds=token_rounds,
                    rounds=job.rounds,
                    reasoning=job.reasoning,
                    reasoning_tokens=reasoning_tokens,
                    reasoning_token_rounds=reasoning_token_rounds,
                )
                self._ids[job.request_id] = message_id
                stored = store.get_message(message_id) if job.final else None
                if job.final and stored is None:
                    raise NotFoundError(f"There is no message {message_id} (it was deleted while it was saved).")
        finally:
            if job.final:
                self._ids.pop(job.request_id, None)
        return stored, time.perf_counter() - started


def save_failure_text(exc: BaseException) -> str:
    """What the window says when a reply could not be stored."""
    if isinstance(exc, (ValueError, TypeError)):  # provenance the store refused: the reply is not lost for it
        why = f"its token record was refused: {exc}"
    else:
        why = str(exc)
    return (
        f"The reply could not be saved ({why}); it stays shown here, and its Copy link still works, until you "
        "open another chat."
    )
