"""`specchat-cli serve`'s handle on its engine process: the HTTP side's jobs go in, the engine's answers come out.

The models run in a child process (app.engine.host.worker, the loop the window's engine process runs), so a
llama.cpp crash (SIGSEGV, abort()) costs only the requests in flight: each gets one error with a sentence, a fresh
child loads the same models, and the requests waiting in line are answered by it. No Qt: the main thread runs
`work_off`, and the HTTP side (uvicorn, the JobQueue) never notices a crash but through those errors.

Every record on the wire carries its request id, and requests in flight are kept by id (app.serve.engine.flights,
shared with the window's API), so the child answers as many at once as it decodes side by side (ModelsLoaded's
`parallel`, `serve --parallel`): that many are sent to it at a time, the rest wait in the JobQueue. Cancelling
crosses as a flag per request (app.engine.host.stops).

The child itself (started, fed without blocking, reaped and put in words after a death, ended politely then
firmly) is app.engine.host.supervisor's, the window's too; its stderr goes to a log file that is copied to this
process's stderr as it grows, so the server's log reads as before.
"""

from __future__ import annotations

import time
from multiprocessing.connection import wait
from pathlib import Path
from typing import Callable, Optional

from app.engine.config import LoadSettings
from app.engine.host.supervisor import ChildGone, ChildSupervisor
from app.engine.host.wire import LoadFailed, LoadModels, ModelsLoaded, ReplyEnded
from app.engine.targets import Target
from app.serve.engine.flights import (
    READING_GRACE_S,
    STOP_GRACE_S,
    ApiFlights,
    OnDone,
    death_sentence,
    restarting,
    unsendable_sentence,
)
from app.serve.jobs import JobQueue, ServedModels, ServeJob, api_request, loaded_models

POLL_S = 0.05  # how soon a client's going away (or its stop string) reaches the child while it answers
CLOSE_WAIT_S = 3.0  # a child asked to exit gets this long before it is killed
DEATH_WAIT_S = 2.0  # a child whose pipe closed gets this long to be gone before it is killed
SHUTTING_DOWN = "The server is shutting down."


class EngineStartError(Exception):
    """The engine process could not load the models; the message is one sentence for a person."""


class EngineClient:
    """Starts the engine process with `target` and `draft` loaded, answers a JobQueue through it, and restarts it
    when it dies. One thread only (the main thread: a child ends with the thread that started it, see
    child_process.die_with_parent)."""

    def __init__(
        self,
        target: Target,
        draft: Optional[Path],
        load: LoadSettings,
        engine_factory: Optional[Callable] = None,
        say: Callable[[str], None] = lambda line: None,
        projector: Optional[Path] = None,
    ):
        self._target, self._draft, self._load = target, draft, load
        self._projector = projector  # the target's mmproj, so it reads pictures
        self._say = say  # one line for the server's log
        # engine_factory: tests' engines; must be picklable (a module-level function)
        self._child = ChildSupervisor("serve-engine", "SpecChat serve engine", engine_factory, echo_log=True)
        self._last_id = 0
        self._flights = ApiFlights(self._child.api_gone, self._child.api_enough)
        self.served = ServedModels()
        self.placement_note = ""  # where the models run and what they were loaded with, in words

    @property
    def pid(self) -> Optional[int]:
        return self._child.pid

    # ----- the child's lifetime

    def start(self) -> ServedModels:
        """Start the engine process and load the models. Raises EngineStartError."""
        self._child.start()
        self._last_id += 1
        self._child.send(LoadModels(self._last_id, self._target, self._draft, self._load, self._projector))
        while True:
            try:
                message = self._child.receive()
            except ChildGone:
                raise EngineStartError(self._death("while loading the model")[1]) from None
            if isinstance(message, LoadFailed):
                self._child.end(CLOSE_WAIT_S)
                raise EngineStartError(message.message)
            if isinstance(message, ModelsLoaded):
                self.served = loaded_models(message)
                self.placement_note = message.placement_note
                return self.served

    def _death(self, doing: str) -> tuple[str, str]:
        """Reap the dead child and put its end in words: "The engine stopped (killed by SIGSEGV) while ...", and
        the same with llama.cpp's last words for this machine's log (a client is told nothing of its files)."""
        end = self._child.reap(DEATH_WAIT_S)
        sentence = death_sentence(end.how, doing)
        return sentence, sentence + (f"; llama.cpp said: {end.detail}" if end.detail else "") + "."

    def close(self) -> None:
        """Stop the child (asked, then killed after CLOSE_WAIT_S) and end the requests still in flight."""
        self._child.close(CLOSE_WAIT_S)
        self._flights.report_read(everything=True)
        self._flights.fail_all(503, SHUTTING_DOWN)

    # ----- answering

    def work_off(
        self, queue: JobQueue, until: Callable[[], bool] = lambda: False, on_done: Optional[OnDone] = None
    ) -> None:
        """Answer the queue's jobs through the child, in order, until `until()` (checked every POLL_S while a
        request is in flight, else every second); `on_done(job, finished)` once the HTTP side has read each answered
        job. Raises EngineStartError when a restarted child cannot load."""
        self._flights.on_done = on_done
        while not until() and self._child.has_child:
            room = max(1, self.served.parallel) - len(self._flights)
            queue.set_room(room)  # what the child takes at once is not waiting behind anyone
            conn = self._child.connection
            watched: list = [conn]
            if room > 0:
                watched.append(queue.fileno())
            try:
                ready = wait(watched, POLL_S if len(self._flights) or self._flights.waiting_to_report else 1.0)
            except (OSError, ValueError):
                return  # the queue was closed: the server is stopping
            if self._flights.forward_stops() and self._child.is_alive():
                self._say(
                    "note: the engine did not stop in time after a client went away (stuck in a chat template or "
                    f"in llama.cpp: {STOP_GRACE_S:.0f} s, or {READING_GRACE_S:.0f} s while a prompt is read), so it "
                    "is restarted."
                )
                self._child.kill()  # its pipe closes: the next round restarts it
            self._flights.report_read()
            if conn in ready:
                try:
                    message = self._child.receive()
                except ChildGone:  # the pipe closed (it died), or a record that cannot be read: not to be trusted
                    self._restart()
                    continue
                self._flights.on_reply(message)
                if isinstance(message, ReplyEnded):
                    self._child.mark_log()
            # A waiting request is sent in the same turn as a record is read: a reply streaming records without a
            # pause kept the pipe always ready, and a request sent together with it joined the batch 1.5 s late.
            # Every waiting request that fits goes in the same turn, so requests sent together join one step.
            while any(item is not conn for item in ready) and len(self._flights) < max(1, self.served.parallel):
                job = queue.take(0)
                if job is None:
                    break
                self._send(job)

    def _send(self, job: ServeJob) -> None:
        self._last_id += 1
        self._flights.add(self._last_id, job)
        try:
            self._child.send(api_request(self._last_id, job.request))
        except Exception as exc:  # a request that cannot cross the pipe (a bug of ours): it alone fails
            self._flights.fail(self._last_id, 500, unsendable_sentence(exc))

    def _restart(self) -> None:
        """The child died: its requests in flight get one error each, and a fresh child loads the same models."""
        sentence, logged = self._death("while answering" if len(self._flights) else "between requests")
        self._say(f"note: {logged}")
        self._flights.fail_all(500, restarting(sentence))
        began = time.monotonic()
        self.start()
        self._say(f"The engine is back ({time.monotonic() - began:.1f} s to restart and load the model).")
