"""The one long-lived inference thread: a worker that owns the engine (both models) and turns its events into signals.

The GUI never calls the worker's slots directly; it emits its own signals, connected with queued connections, so
loading and generating run here in order while the event loop stays free. Stop is a `threading.Event` the GUI sets
directly, because a queued "stop" slot would only run after the generation it should stop.
"""

from __future__ import annotations

import threading
import time
import traceback
from typing import Callable, Optional

from PySide6.QtCore import QObject, QThread, Signal, Slot

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.errors import EngineError
from app.engine.events import FinishedEvent, RoundEvent, TokenEvent


STREAM_BATCH_S = 0.025
MEASURING_MESSAGE = "Measuring speed…"


def _default_engine_factory(load: LoadSettings):
    from app.engine.engine import SpecEngine

    return SpecEngine(load)


class InferenceWorker(QObject):
    """Lives on the inference thread; every slot runs there. Only `InferenceThread` creates and moves it."""

    sig_models_loaded = Signal(int, object, object, int)
    """(request_id, target_path, draft_path or None, n_ctx): the requested models are loaded and ready."""
    sig_load_failed = Signal(int, str)
    """(request_id, message): loading failed; the message is meant for a person."""
    sig_load_progress = Signal(int, str)
    """(request_id, message): a slow step of loading has begun; the message is meant for a person."""
    sig_context = Signal(int, int, int, int)
    """(request_id, dropped_messages, prompt_tokens or -1, n_ctx): the prompt was fitted to the context."""
    sig_stream = Signal(object)
    """A list of TokenEvents and RoundEvents of the request being generated, in order (about every 25 ms)."""
    sig_finished = Signal(object)
    """The FinishedEvent of a request that ran to its end; never emitted for a stopped request."""
    sig_generation_failed = Signal(int, str)
    """(request_id, message): the engine raised; the message is meant for a person."""
    sig_generation_ended = Signal(int)
    """(request_id): the worker is done with this request, however it ended (finished, stopped or failed)."""

    def __init__(self, load: LoadSettings, engine_factory: Optional[Callable] = None):
        super().__init__()
        self._load = load
        self._engine_factory = engine_factory or _default_engine_factory
        self._engine = None

    def _ensure_engine(self, load: LoadSettings):
        if self._engine is None:
            self._engine = self._engine_factory(load)
        elif load != self._load:
            # Context size, threads or GPU layers changed: llama.cpp needs the models loaded again.
            self._engine.reconfigure(load)
        self._load = load
        return self._engine

    @Slot(int, object, object, object)
    def load_models(self, request_id: int, target_path, draft_path, load: LoadSettings) -> None:
        """Load the target (and draft, or unload it when None); already-loaded files are kept."""
        try:
            engine = self._ensure_engine(load)
            if target_path is None:
                engine.unload()
            else:
                if engine.target_path is None or str(engine.target_path) != str(target_path):
                    engine.load_target(target_path)
                current_draft = engine.draft_path
                if (current_draft is None) != (draft_path is None) or (
                    draft_path is not None and str(current_draft) != str(draft_path)
                ):
                    engine.load_draft(draft_path)
                if hasattr(engine, "measure_costs"):  # the scripted test engine has none
                    if not engine.costs_cached():
                        self.sig_load_progress.emit(request_id, MEASURING_MESSAGE)
                    engine.measure_costs()  # part of loading, so the first reply does not wait for it
        except EngineError as exc:
            self.sig_load_failed.emit(request_id, str(exc))
            return
        except Exception as exc:  # never let the thread die on something unforeseen
            traceback.print_exc()
            self.sig_load_failed.emit(request_id, f"Loading failed: {exc}")
            return
        self.sig_models_loaded.emit(request_id, engine.target_path, engine.draft_path, engine.n_ctx)

    @Slot(int, object, object, object)
    def generate(self, request_id: int, messages: list, config: GenerationConfig, cancel: threading.Event) -> None:
        """Generate a reply to `messages`, emitting its events until it ends or `cancel` is set."""
        try:
            if cancel.is_set():
                return
            engine = self._engine
            if engine is None or engine.target_path is None:
                self.sig_generation_failed.emit(request_id, "No model is loaded. Choose a model above.")
                return
            reserve = max(16, min(config.max_tokens, engine.n_ctx // 2))
            kept, dropped = engine.fit_messages(messages, reserve)
            prompt_tokens = engine.count_tokens(kept) if hasattr(engine, "count_tokens") else -1
            self.sig_context.emit(request_id, dropped, prompt_tokens, engine.n_ctx)
            # Token and round events cross to the GUI in batches: one queued signal per token costs the GUI
            # thread time that, on a small CPU, is taken from decoding (llama.cpp keeps every core busy).
            batch: list = []
            last_sent = time.monotonic()
            for event in engine.chat(kept, config, cancel=cancel, request_id=request_id):
                if cancel.is_set():
                    break  # stopped: nothing more, and no result, leaves this thread
                if isinstance(event, (TokenEvent, RoundEvent)):
                    batch.append(event)
                    now = time.monotonic()
                    if now - last_sent >= STREAM_BATCH_S:
                        self.sig_stream.emit(batch)
                        batch, last_sent = [], now
                elif isinstance(event, FinishedEvent):
                    if batch:
                        self.sig_stream.emit(batch)
                        batch = []
                    self.sig_finished.emit(event)
            if batch and not cancel.is_set():
                self.sig_stream.emit(batch)
        except EngineError as exc:
            if not cancel.is_set():
                self.sig_generation_failed.emit(request_id, str(exc))
        except Exception as exc:
            traceback.print_exc()
            if not cancel.is_set():
                self.sig_generation_failed.emit(request_id, f"Generation failed: {exc}")
        finally:
            self.sig_generation_ended.emit(request_id)

    @Slot()
    def shutdown(self) -> None:
        """Free both models; the last call before the thread quits."""
        if self._engine is not None:
            try:
                self._engine.close()
            finally:
                self._engine = None


class InferenceThread(QObject):
    """The GUI-side handle of the inference thread. GUI thread only.

    Requests go out through queued signals; results come back on the worker's signals (re-exported here).
    """

    _sig_load = Signal(int, object, object, object)
    """Queued to InferenceWorker.load_models."""
    _sig_generate = Signal(int, object, object, object)
    """Queued to InferenceWorker.generate."""
    _sig_shutdown = Signal()
    """Queued to InferenceWorker.shutdown."""

    def __init__(self, load: LoadSettings, engine_factory: Optional[Callable] = None, parent=None):
        super().__init__(parent)
        self._thread = QThread()
        self._thread.setObjectName("SpecChat inference")
        self.worker = InferenceWorker(load, engine_factory)
        self.worker.moveToThread(self._thread)
        self._thread.finished.connect(self.worker.deleteLater)
        self._sig_load.connect(self.worker.load_models)
        self._sig_generate.connect(self.worker.generate)
        self._sig_shutdown.connect(self.worker.shutdown)
        self._thread.start()

    def request_load(self, request_id: int, target_path, draft_path, load: LoadSettings) -> None:
        self._sig_load.emit(request_id, target_path, draft_path, load)

    def request_generate(self, request_id: int, messages: list, config: GenerationConfig, cancel: threading.Event) -> None:
        self._sig_generate.emit(request_id, messages, config, cancel)

    def is_running(self) -> bool:
        return self._thread.isRunning()

    def stop(self, timeout_ms: int = 30000) -> bool:
        """Free the models and end the thread; returns False if it did not end in time.

        The caller sets the cancel event of a running generation first, or this waits for it to end.
        """
        if not self._thread.isRunning():
            return True
        self._sig_shutdown.emit()
        self._thread.quit()
        return self._thread.wait(timeout_ms)
