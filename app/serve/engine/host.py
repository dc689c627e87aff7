"""The API server inside the window's engine process, which owns the models the window loaded.

The window sends an ApiServeSpec (in the wire's ServeApi request); the worker calls its `start`, and from
then on waits on the returned ApiHost as well as on the window's pipe, calling `answer_next` whenever a request is
in line, so API requests and the window's own are answered one at a time on the worker's thread, in the order they
come. The host tells the window what it is doing with ApiState records; the window's Stop for an API request raises
a shared "stopped up to" number, as its Stop for its own replies does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Optional

from app.engine.config import GenerationConfig
from app.engine.host.wire import ApiStateChanged
from app.engine.protocol import ChatEngine
from app.serve.jobs import run_job, served_models
from app.serve.requests import ApiLimits, ApiOptions, api_history

if TYPE_CHECKING:  # the HTTP side is imported when a server starts: the window imports this module at its start
    from app.serve.server import ApiServer


@dataclass(frozen=True)
class ApiState:
    """What the engine process's API server is doing, for the window to show."""

    url: str = ""  # the base URL while it listens, "" when it does not
    error: str = ""  # why it does not listen, in one sentence ("" when it was simply turned off)
    serving: int = 0  # the stop id of the request being answered (0: none)
    model: str = ""  # the model answering it
    answered: int = 0  # requests answered since it started


@dataclass(frozen=True)
class ApiServeSpec:
    """Where and how the engine process serves the window's models. Picklable: it crosses the pipe."""

    host: str = "127.0.0.1"
    port: int = 1234
    api_key: Optional[str] = field(default=None, repr=False)
    limits: ApiLimits = ApiLimits()
    own_history: bool = False  # API clients draft from a history of their own (never the person's chats)

    def start(self, send: Callable[[ApiStateChanged], None], stopped_up_to) -> Optional["ApiHost"]:
        """Start listening (on the worker's thread); None when that failed, which `send` has told the window."""
        from app.serve.server import ApiServer, ServeError

        # The window's speculation: the loaded draft model, else n-gram lookup, with the auto controller.
        options = ApiOptions(host=self.host, port=self.port, api_key=self.api_key, limits=self.limits,
                             defaults=GenerationConfig(session="api", **api_history(self.own_history)))
        server = ApiServer(options)
        try:
            url = server.start()
        except ServeError as exc:
            send(ApiStateChanged(ApiState(error=str(exc))))
            return None
        return ApiHost(server, url, send, stopped_up_to)


class _StoppedFlag:
    """is_set() once the window's Stop reached this request's stop id."""

    def __init__(self, stopped_up_to, stop_id: int):
        self._shared, self._stop_id = stopped_up_to, stop_id

    def is_set(self) -> bool:
        return self._shared.value >= self._stop_id


class ApiHost:
    """The running server, as the worker loop drives it. Every method on the worker's thread."""

    def __init__(self, server: ApiServer, url: str, send: Callable[[ApiStateChanged], None], stopped_up_to):
        self._server, self._url, self._send, self._stopped_up_to = server, url, send, stopped_up_to
        # Stop ids continue from the shared number, so a Stop pressed for an earlier server's request never stops
        # one of this server's.
        self._base = stopped_up_to.value
        self._answered = 0
        self._send(ApiStateChanged(ApiState(url=url)))

    def fileno(self) -> int:
        """Readable while a request waits."""
        return self._server.queue.fileno()

    def models_changed(self, engine: Optional[ChatEngine]) -> None:
        self._server.publish(served_models(engine))

    def answer_next(self, engine: Optional[ChatEngine]) -> None:
        """Answer the oldest waiting request, if one still waits."""
        job = self._server.queue.take(0)
        if job is None:
            return
        stop_id = self._base + job.serial
        model = self._server.served.target
        self._send(ApiStateChanged(ApiState(url=self._url, serving=stop_id, model=model, answered=self._answered)))
        try:
            run_job(engine, job, stopped=_StoppedFlag(self._stopped_up_to, stop_id))
        finally:
            self._answered += 1
            self._send(ApiStateChanged(ApiState(url=self._url, answered=self._answered)))

    def close(self) -> None:
        self._server.stop()
        try:
            self._send(ApiStateChanged(ApiState()))
        except (OSError, ValueError):
            pass  # the window is gone (the engine process is closing)
