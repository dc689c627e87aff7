"""The engine's own process: the loop that owns a SpecEngine and answers requests over a pipe.

llama.cpp stops its whole process with abort() on inputs it does not validate, so the window never loads a model
itself: it starts this loop in a child process (multiprocessing, "spawn") and supervises it. Everything that
crosses the pipe is a plain tuple of picklable records, so this module knows nothing of Qt.

Requests (parent -> worker), handled one at a time in order:
    ("load", request_id, target_path | None, draft_path | None, LoadSettings)
    ("generate", request_id, messages, GenerationConfig)
    ("shutdown",)
Replies (worker -> parent):
    ("ready",)                                           the worker is up
    ("loading", request_id, path, what)                  about to load `path`; `what` is "target" or "draft"
    ("loaded", request_id, target, draft, n_ctx, note)   `note`: where the models run, for a person
    ("load_failed", request_id, message)
    ("context", request_id, dropped, prompt_tokens, n_ctx)
    ("notice", request_id, text)                         e.g. the model's chat template could not be used
    ("stream", [TokenEvent | RoundEvent | ThreadsEvent, ...])  batched, about every STREAM_BATCH_S
    ("finished", FinishedEvent)                          never sent for a cancelled request
    ("failed", request_id, message)
    ("ended", request_id)                                always last for a generate request

Stop crosses as a shared integer, not a message: the highest cancelled request id. The loop's main thread is busy
inside generation when a stop matters, so a queued "stop" message would only be read after the reply ended.
"""

from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from typing import Callable, Optional

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.errors import EngineError
from app.engine.events import FinishedEvent, RoundEvent, ThreadsEvent, TokenEvent
from app.engine.protocol import ChatEngine

STREAM_BATCH_S = 0.05
# Background work waits this long after the last request, so a reply and the next message typed soon after it
# never share the CPU with it: it counts from the end of the last request.
IDLE_AFTER_S = 1.0


class CancelFlag:
    """`is_set()` for one request, read from the shared "highest cancelled id" value (any thread, any process)."""

    def __init__(self, cancelled_up_to, request_id: int):
        self._shared = cancelled_up_to
        self._request_id = request_id

    def is_set(self) -> bool:
        return self._shared.value >= self._request_id

    def set(self) -> None:
        if self._shared.value < self._request_id:
            self._shared.value = self._request_id


def default_engine_factory(load: LoadSettings):
    """Local models for file targets, a server's for server targets (app.engine.host.engine_factory)."""
    from app.engine.host.engine_factory import DispatchingEngine

    return DispatchingEngine(load)


def _redirect_stderr(log_path: Optional[str]) -> None:
    """Send this process's fd 2 to `log_path`: llama.cpp writes its assertion text there just before abort(), and
    the parent reads the file's tail to say what happened."""
    if not log_path:
        return
    fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stderr = open(2, "w", buffering=1, encoding="utf-8", errors="replace", closefd=False)


def run_worker(conn, cancelled_up_to, log_path: Optional[str] = None,
               engine_factory: Optional[Callable] = None) -> None:
    """The worker process's main function (multiprocessing target)."""
    # ggml's abort handler otherwise runs gdb to print a backtrace: seconds of delay before the crash is reported.
    os.environ["GGML_NO_BACKTRACE"] = "1"
    _redirect_stderr(log_path)
    _exit_with_parent()
    host = _WorkerLoop(conn, cancelled_up_to, engine_factory or default_engine_factory)
    try:
        host.serve()
    finally:
        host.close()


def _exit_with_parent() -> None:
    """End this process when the window's process is gone (killed, crashed): nobody is left to read its replies,
    and a model load or a reply would otherwise run to its end holding the memory."""
    parent = os.getppid()

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="parent watch", daemon=True).start()


class _WorkerLoop:
    """Runs in the worker process's main thread only."""

    def __init__(self, conn, cancelled_up_to, engine_factory: Callable):
        self._conn = conn
        self._cancelled_up_to = cancelled_up_to
        self._engine_factory = engine_factory
        self._engine: Optional[ChatEngine] = None
        self._load: Optional[LoadSettings] = None

    def _send(self, message: tuple) -> None:
        self._conn.send(message)

    def serve(self) -> None:
        self._send(("ready",))
        idle_work, idle_since = False, time.monotonic()
        while True:
            if idle_work and self._engine is not None:
                # Background work (measuring forward-pass costs) runs a step at a time once nothing has happened
                # for IDLE_AFTER_S, and only while no request is waiting: a request waits for one step at most.
                wait = max(0.0, idle_since + IDLE_AFTER_S - time.monotonic())
                try:
                    if not self._conn.poll(wait):
                        idle_work = self._idle_step()
                        continue
                except (EOFError, OSError):
                    return
            try:
                request = self._conn.recv()
            except (EOFError, OSError):
                return  # the window is gone
            kind = request[0]
            if kind == "shutdown":
                return
            if kind == "load":
                self._load_models(*request[1:])
            elif kind == "generate":
                self._generate(*request[1:])
            idle_work, idle_since = True, time.monotonic()

    def _idle_step(self) -> bool:
        try:
            return self._engine.idle_step()
        except Exception:  # background work must never take the engine down; it is tried after the next request
            traceback.print_exc()
            return False

    def close(self) -> None:
        if self._engine is not None:
            try:
                self._engine.close()
            finally:
                self._engine = None

    # ----- loading

    def _ensure_engine(self, load: LoadSettings) -> ChatEngine:
        if self._engine is None:
            self._engine = self._engine_factory(load)
        elif load != self._load:
            # Context size, threads or GPU layers changed: llama.cpp needs the models loaded again.
            self._engine.reconfigure(load)
        self._load = load
        return self._engine

    def _load_models(self, request_id: int, target_path, draft_path, load: LoadSettings) -> None:
        try:
            engine = self._ensure_engine(load)
            if target_path is None:
                engine.unload()
            else:
                if engine.target_path is None or str(engine.target_path) != str(target_path):
                    self._send(("loading", request_id, str(target_path), "target"))
                    engine.load_target(target_path, planned_draft=draft_path)
                current = engine.draft_path
                if (current is None) != (draft_path is None) or (
                    draft_path is not None and str(current) != str(draft_path)
                ):
                    if draft_path is not None:
                        self._send(("loading", request_id, str(draft_path), "draft"))
                    engine.load_draft(draft_path)
        except EngineError as exc:
            self._send(("load_failed", request_id, str(exc)))
            return
        except Exception as exc:  # never let the loop die on something unforeseen
            traceback.print_exc()
            self._send(("load_failed", request_id, f"Loading failed: {exc}"))
            return
        note = engine.placement_note
        target = str(engine.target_path) if engine.target_path else None
        draft = str(engine.draft_path) if engine.draft_path else None
        self._send(("loaded", request_id, target, draft, engine.n_ctx, note))

    # ----- generation

    def _generate(self, request_id: int, messages: list, config: GenerationConfig) -> None:
        cancel = CancelFlag(self._cancelled_up_to, request_id)
        try:
            if cancel.is_set():
                return
            engine = self._engine
            if engine is None or engine.target_path is None:
                self._send(("failed", request_id, "No model is loaded. Choose a model above."))
                return
            reserve = max(16, min(config.max_tokens, engine.n_ctx // 2))
            kept, dropped = engine.fit_messages(messages, reserve, session=config.session)
            prompt_tokens = engine.count_tokens(kept)
            if engine.template_notice:
                self._send(("notice", request_id, engine.template_notice))
            self._send(("context", request_id, dropped, prompt_tokens, engine.n_ctx))
            self._stream(engine.chat(kept, config, cancel=cancel, request_id=request_id), cancel)
        except EngineError as exc:
            if not cancel.is_set():
                self._send(("failed", request_id, str(exc)))
        except Exception as exc:
            traceback.print_exc()
            if not cancel.is_set():
                self._send(("failed", request_id, f"Generation failed: {exc}"))
        finally:
            self._send(("ended", request_id))

    def _stream(self, events, cancel: CancelFlag) -> None:
        # Token and round events cross in batches: one message per token costs the window's thread time that,
        # on a small CPU, is taken from decoding (llama.cpp keeps every core busy).
        # The first token goes at once: how soon a reply starts is what a person waits for.
        batch: list = []
        last_sent = time.monotonic()
        first = True
        try:
            for event in events:
                if cancel.is_set():
                    return  # stopped: nothing more, and no result, leaves this process
                if isinstance(event, (TokenEvent, RoundEvent, ThreadsEvent)):
                    batch.append(event)
                    now = time.monotonic()
                    if now - last_sent >= STREAM_BATCH_S or (first and isinstance(event, TokenEvent)):
                        first = False
                        self._send(("stream", batch))
                        batch, last_sent = [], now
                elif isinstance(event, FinishedEvent):
                    if batch:
                        self._send(("stream", batch))
                        batch = []
                    self._send(("finished", event))
        finally:
            # Also when the reply fails midway (a server's connection dropped): what arrived is part of the reply
            # the window keeps, and it must arrive before the failure.
            if batch and not cancel.is_set():
                self._send(("stream", batch))
