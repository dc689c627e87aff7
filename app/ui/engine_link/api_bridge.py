"""The window's local API: its HTTP side runs in the window's process, and its requests cross to the engine
process as the wire's AnswerChat and AnswerCompletion, as `specchat-cli serve`'s do.

So a llama.cpp crash costs the API's clients in flight one error with a sentence each (app.serve.engine.flights
keeps them by id), and the server keeps listening: it answers again once the fresh engine has the models back.
The person's messages never wait behind the API: where the engine answers one request at a time, an API request is
sent only while no reply or load of the window's is in flight, one at a time; where it answers several side by side
(Settings' "Requests at once"), API requests take at most all but one of them, so a message the person sends joins
the batch at its next step. uvicorn is imported only when the switch is on, and nothing here
loads llama.cpp. GUI thread only.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Optional

from PySide6.QtCore import QObject, QSocketNotifier, QTimer, Signal

from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent
from app.engine.host.wire import API_IDS_FROM, EngineEvents, ModelsLoaded, ReplyEnded
from app.replies.status_words import kept_words
from app.serve.engine.flights import ApiFlights, death_sentence, restarting
from app.serve.jobs import ServedModels, api_request, loaded_models
from app.serve.requests import ApiLimits, ApiOptions, api_history
from app.ui.engine_link.engine_process import EngineProcess
from app.ui.engine_link.worker_death import WorkerDeath

if TYPE_CHECKING:  # the HTTP side is imported when the server starts, never at the window's start
    from app.serve.server import ApiServer

POLL_MS = 50  # how soon a client's going away (or its stop string) reaches the engine while it answers
# How soon the footer counts a request that arrived while none could go to the engine (the socket notifier sleeps
# then, so the queue is looked at on a timer).
WAITING_MS = 250
SHUTTING_DOWN = "The API server was switched off."


@dataclass(frozen=True)
class ApiState:
    """What the window's API server is doing, for the footer and the Settings page."""

    url: str = ""  # the base URL while it listens, "" when it does not
    error: str = ""  # why it does not listen, in one sentence ("" when it was simply turned off)
    serving: int = 0  # the request id being answered (0: none), for Stop
    model: str = ""  # the model answering it
    answered: int = 0  # requests answered since it started
    waiting: int = 0  # requests waiting for their turn ("Requests at once" answered side by side already)
    last_kept: str = ""  # what drafting gave the last request answered, in words (app.replies.status_words)


@dataclass(frozen=True)
class ApiSpec:
    """Where and how the window serves its models."""

    host: str = "127.0.0.1"
    port: int = 1234
    api_key: Optional[str] = field(default=None, repr=False)
    limits: ApiLimits = ApiLimits()
    own_history: bool = False  # API clients draft from a history of their own (never the person's chats)


class WindowApi(QObject):
    """The window's API server, answered through its EngineProcess."""

    sig_state_changed = Signal(object)
    """The ApiState now."""

    def __init__(self, engine_process: EngineProcess, parent=None):
        super().__init__(parent)
        self._engine_process = engine_process
        self._flights = ApiFlights(engine_process.api_gone, engine_process.api_enough)
        self._server: Optional[ApiServer] = None
        self._spec: Optional[ApiSpec] = None
        self._notifier: Optional[QSocketNotifier] = None
        self._served = ServedModels()
        self._last_id = API_IDS_FROM
        self.state = ApiState()
        self._last_kept = ""  # of the last reply finished, shown once its request is answered
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._forward_stops)
        self._watch = QTimer(self)  # runs while the notifier sleeps: it counts the requests that wait
        self._watch.setInterval(WAITING_MS)
        self._watch.timeout.connect(self._count_waiting)
        engine_process.sig_api_answer.connect(self._on_answer)
        engine_process.sig_models_loaded.connect(self._on_models_loaded)
        engine_process.sig_generation_ended.connect(lambda _ended: self._send_next())
        engine_process.sig_load_failed.connect(lambda _failed: self._send_next())
        engine_process.sig_worker_died.connect(self._on_worker_died)

    # ----- listening

    def start(self, spec: ApiSpec) -> None:
        """Listen as `spec` says (after stopping what listens now, unless it listens so already); a failure is said in
        the state's error."""
        from app.serve.server import ApiServer, ServeError

        if self._server is not None and spec == self._spec:
            return  # the same settings saved again: the requests in flight go on
        self.stop()
        self._spec = spec
        # The window's speculation: the loaded draft model, else n-gram lookup, with the auto controller.
        options = ApiOptions(
            host=spec.host,
            port=spec.port,
            api_key=spec.api_key,
            limits=spec.limits,
            defaults=GenerationConfig(session="api", **api_history(spec.own_history)),
        )
        server = ApiServer(options)
        server.publish(self._served)
        try:
            url = server.start()
        except ServeError as exc:
            self._set_state(ApiState(error=str(exc)))
            return
        self._server = server
        self._notifier = QSocketNotifier(server.queue.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._send_next)
        self._set_state(ApiState(url=url))
        self._send_next()

    def stop(self) -> None:
        """Stop listening; the requests waiting or in flight end with a 503."""
        if self._notifier is not None:
            self._notifier.setEnabled(False)
            self._notifier.deleteLater()
            self._notifier = None
        server, self._server = self._server, None
        for request_id in self._flights.ids():
            self._flights.stop(request_id)  # the engine stops it at its next round
        self._flights.fail_all(503, SHUTTING_DOWN)
        if server is not None:
            server.stop()
        self._poll.stop()
        self._watch.stop()
        if self.state != ApiState():
            self._set_state(ApiState())

    def stop_request(self) -> None:
        """The footer's Stop: the requests being answered end at their next round, and their clients hear why."""
        for request_id in self._flights.ids():
            self._flights.stop(request_id)

    # ----- answering

    def _send_next(self, *_args) -> None:
        """Send the oldest waiting request when the engine is free of the window's work and of other API requests;
        the socket notifier sleeps meanwhile (the queue stays readable while a request waits)."""
        if self._server is None or self._notifier is None:
            return
        while self._room():
            job = self._server.queue.take(0)
            if job is None:
                break
            self._last_id += 1
            self._flights.add(self._last_id, job)
            self._poll.start()
            self._set_state(
                ApiState(
                    url=self.state.url, serving=self._last_id, model=self._served.target, answered=self.state.answered
                )
            )
            self._engine_process.request_api_answer(api_request(self._last_id, job.request))
        room = self._room()
        self._server.queue.set_room(room)  # what goes to the engine at once is not waiting behind anyone
        self._notifier.setEnabled(room > 0)
        if room > 0:
            self._watch.stop()
        else:
            self._watch.start()
        self._count_waiting()

    def _count_waiting(self) -> None:
        """Say in the state how many requests wait for their turn, when that changed."""
        waiting = self._server.queue.waiting() if self._server is not None else 0
        if waiting != self.state.waiting:
            self._set_state(dataclasses.replace(self.state, waiting=waiting))

    def _room(self) -> int:
        """How many more API requests may go to the engine now (the module's docstring says when)."""
        if self._served.parallel <= 1:
            return int(not len(self._flights) and not self._engine_process.busy())
        if self._engine_process.loading():
            return 0
        return max(0, self._served.parallel - 1 - len(self._flights))

    def _on_answer(self, message: object) -> None:
        if not self._flights.on_reply(message):
            return
        if isinstance(message, EngineEvents):
            for event in message.events:
                if isinstance(event, FinishedEvent):
                    self._last_kept = kept_words(event.stats)
        elif isinstance(message, ReplyEnded):
            self._answered()

    def _answered(self) -> None:
        if not len(self._flights):
            self._poll.stop()
        self._flights.report_read(everything=True)  # nobody waits on them here
        if self._server is not None:
            serving = max(self._flights.ids(), default=0)  # others still answered side by side
            self._set_state(
                ApiState(
                    url=self.state.url,
                    serving=serving,
                    model=self.state.model if serving else "",
                    answered=self.state.answered + 1,
                    last_kept=self._last_kept or self.state.last_kept,
                )
            )
        self._send_next()

    def _forward_stops(self) -> None:
        if self._flights.forward_stops():
            self._engine_process.replace_stuck()  # its sig_worker_died fails the request

    # ----- the engine process

    def _on_models_loaded(self, loaded: ModelsLoaded) -> None:
        self._served = loaded_models(loaded)
        if self._server is not None:
            self._server.publish(self._served)
        self._send_next()

    def _on_worker_died(self, death: WorkerDeath) -> None:
        """The engine process died: each API request in flight gets one error with a sentence, and those waiting
        are answered once the fresh engine has the models back (the window loads them again)."""
        answering = bool(len(self._flights))
        self._flights.fail_all(500, restarting(death_sentence(death.ended, "while answering")))
        self._served = ServedModels()
        if self._server is not None:
            self._server.publish(self._served)
            if answering:
                self._answered()
        self._poll.stop()
        QTimer.singleShot(0, self._send_next)  # after the window has asked the fresh engine for its models

    def _set_state(self, state: ApiState) -> None:
        self.state = state
        self.sig_state_changed.emit(state)
