"""The window's handle on the engine process: starts it, turns its replies into signals, and supervises it.

The models live in a child process (app.engine.host.worker), because llama.cpp can abort() its process. If the
worker dies or hangs, this handle says so in one sentence (worded by worker_death.py), ends the request in
flight as failed, and starts a fresh worker; the window keeps its chats. Closing asks the worker to exit, waits
briefly, then kills it, so closing never waits on llama.cpp.

The child itself (started, fed without blocking, reaped and put in words, ended politely then firmly) is
app.engine.host.supervisor's, `serve`'s too; this handle keeps the Qt side: the signals, the timers that notice a
Stop not heard, and which requests and errands in flight a death answers. Messages both ways are records of
app.engine.host.wire. GUI thread only, except the supervisor's reader thread, which only emits `_sig_message` /
`_sig_eof`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QObject, QTimer, Signal

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import ContextEvent, FinishedEvent, NoticeEvent, RoundEvent, TokenEvent
from app.engine.host.wire import (
    API_IDS_FROM,
    AnswerChat,
    AnswerCompletion,
    ApiHistoryMeasured,
    ChatForgotten,
    CountPicture,
    DevicesListed,
    EngineEvents,
    ForgetChat,
    GenerateReply,
    ListDevices,
    LoadFailed,
    LoadingModel,
    LoadModels,
    MeasureApiHistory,
    ModelsLoaded,
    PictureCounted,
    Reply,
    ReplyEnded,
    ReplyFailed,
    ReplyStarted,
    Request,
)
from app.engine.host.errands import Errand
from app.engine.image_files import ImageInput
from app.engine.placement.devices import DeviceReport
from app.engine.host.supervisor import ChildEnd, ChildSupervisor
from app.engine.targets import Target
from app.ui.engine_link import worker_death

CLOSE_WAIT_S = 1.5
DEATH_WAIT_S = 1.0  # a worker whose pipe closed gets this long to be gone before it is killed
# A stopped request whose "ended" has not come back by then means the worker is stuck (a template or a llama.cpp
# call that never returns): it is killed and replaced.
STOP_GRACE_MS = 3000
# Once its prompt fits and until its first token, a request is reading its prompt, and a stop is heard only between
# two chunks, which take tens of seconds for a large model on a slow CPU (app.serve.engine.flights says the same).
READING_GRACE_MS = 60000


class EngineProcess(QObject):
    """The GUI-side handle of the engine process. GUI thread only."""

    # Every signal carries one record (app.engine.host.wire, app.engine.events): one vocabulary end to end.
    sig_models_loaded = Signal(object)
    """ModelsLoaded: the models are loaded and ready."""
    sig_load_failed = Signal(object)
    """LoadFailed: loading failed; its message is meant for a person."""
    sig_context = Signal(object)
    """ContextEvent: the prompt was fitted to the context."""
    sig_notice = Signal(object)
    """NoticeEvent: something about this request the user should know (e.g. the chat template's fallback)."""
    sig_stream = Signal(object)
    """A list of TokenEvents and RoundEvents of the request being generated, in order."""
    sig_finished = Signal(object)
    """The FinishedEvent of a request that ran to its end; never emitted for a stopped request."""
    sig_engine_event = Signal(object)
    """Any other engine record of a reply (app.engine.events), as it came: new kinds need no change here."""
    sig_generation_failed = Signal(object)
    """ReplyFailed: the engine raised or died; its message is meant for a person."""
    sig_generation_ended = Signal(object)
    """ReplyEnded: the engine is done with this request, however it ended."""
    sig_worker_died = Signal(object)
    """A WorkerDeath: the engine process crashed or hung and a fresh one was started (no models loaded in it)."""
    sig_api_answer = Signal(object)
    """ReplyStarted, ReplyFailed, EngineEvents or ReplyEnded of an API request (request_api_answer), as it came."""
    sig_devices_listed = Signal(object)
    """DeviceReport: the devices of the engine process's llama.cpp build, answering request_devices."""
    sig_chat_forgotten = Signal(object)
    """ChatForgotten: a deleted chat's text left the history drafter's file and its saved states the disk."""
    sig_api_history_measured = Signal(object)
    """ApiHistoryMeasured: the size of the API clients' own history, answering request_api_history."""
    sig_picture_counted = Signal(object)
    """PictureCounted: the tokens a picture takes with the loaded target's projector, answering count_picture."""

    _sig_message = Signal(int, object)
    """(incarnation, reply): from the reader thread."""
    _sig_eof = Signal(int)
    """(incarnation): the reader thread saw the pipe close."""

    def __init__(self, engine_factory: Optional[Callable] = None, parent=None):
        super().__init__(parent)
        self._worker = ChildSupervisor(
            "engine-worker",
            "SpecChat engine",
            engine_factory,
            on_reply=self._sig_message.emit,
            on_gone=self._sig_eof.emit,
        )
        # The API's requests' Stop (their client went away, or Stop in the footer) and "enough" (a stop string came).
        # The API's requests are answered side by side: a flag each (app.engine.host.stops).
        self.api_gone = self._worker.api_gone
        self.api_enough = self._worker.api_enough
        self._closing = False
        self._load_in_flight: Optional[int] = None
        self._loading_path: Optional[str] = None
        self._target: Optional[Target] = None  # the target last asked for: a server's stuck reply is not llama.cpp's
        self._generate_in_flight: set[int] = set()
        self._reading: set[int] = set()  # requests whose prompt fits and that have written no token yet
        # Errands (app.engine.host.errands) not answered yet, sent again to a fresh worker; the last device list.
        self._errands: dict[int, Errand] = {}
        self._errand_id = 0
        self.devices: Optional[DeviceReport] = None
        self._stuck_timers: dict[int, QTimer] = {}
        self._sig_message.connect(self._on_message)
        self._sig_eof.connect(self._on_eof)

    # ----- process lifetime

    def _ensure_started(self) -> None:
        if not self._worker.has_child and not self._closing:
            self._worker.start()

    def is_running(self) -> bool:
        return self._worker.is_alive()

    def pid(self) -> Optional[int]:
        return self._worker.pid

    def stop(self) -> bool:
        """End the worker: ask, wait up to CLOSE_WAIT_S, then kill. Returns True if it exited by itself."""
        self._closing = True
        for timer in self._stuck_timers.values():
            timer.stop()
        self._stuck_timers.clear()
        return self._worker.close(CLOSE_WAIT_S)

    def _after_death(self, message: str, end: ChildEnd, ended: str) -> None:
        """The worker died or hung and was replaced (`end`: how it ended, `ended` in words for the API's clients):
        the requests in flight fail with a sentence, the window hears of the death, and the errands in flight are
        answered or sent again."""
        detail, build_fault = end.detail, end.build_fault
        death = worker_death.WorkerDeath(
            message,
            detail,
            self._loading_path,
            self._load_in_flight,
            min(self._generate_in_flight) if self._generate_in_flight else None,
            build_fault,
            ended,
        )
        sentence = worker_death.failed_reply_sentence(message, detail, build_fault)
        for timer in self._stuck_timers.values():
            timer.stop()
        self._stuck_timers.clear()
        for request_id in sorted(self._generate_in_flight):
            self.sig_generation_failed.emit(ReplyFailed(request_id, sentence, retryable=not build_fault))
            self.sig_generation_ended.emit(ReplyEnded(request_id))
        self._generate_in_flight.clear()
        self._reading.clear()
        self._load_in_flight = self._loading_path = None
        self.sig_worker_died.emit(death)
        for errand in list(self._errands.values()):
            answer = worker_death.answer_instead(errand)
            if answer is None:
                self._send(errand)
            else:
                self._on_message(self._worker.incarnation, answer)

    def _replace_stuck(self) -> None:
        """Kill the worker that did not answer a Stop in time, and start a fresh one."""
        self._after_death(worker_death.stuck_sentence(self._target), self._worker.restart(0), ended="it hung")

    def _on_eof(self, incarnation: int) -> None:
        if incarnation != self._worker.incarnation or self._closing:
            return
        end = self._worker.restart(DEATH_WAIT_S)
        sentence = worker_death.exit_sentence(end.exit_code)
        self._after_death(sentence, end, ended=end.how)

    # ----- requests

    def _send(self, message: Request) -> None:
        self._ensure_started()
        # Nothing is sent once the window is closing; a death is reported by the reader thread, which fails the
        # request in flight.
        self._worker.send(message)

    def request_load(
        self,
        request_id: int,
        target: Optional[Target],
        draft: Optional[Path],
        load: LoadSettings,
        projector: Optional[Path] = None,
    ) -> None:
        """Load `target` and `draft` with `load`; `projector`: the one chosen in its Model settings (None: the one
        beside it), read at its first picture."""
        self._load_in_flight = request_id
        self._target = target
        draft = None if draft is None else Path(draft)
        self._send(LoadModels(request_id, target, draft, load, chosen_projector=projector))

    def request_generate(self, request_id: int, messages: list, config: GenerationConfig) -> None:
        self._generate_in_flight.add(request_id)
        self._send(GenerateReply(request_id, tuple(messages), config))

    def busy(self) -> bool:
        """A reply of the window's or a load is in flight: the API's requests wait, so the person's go first."""
        return bool(self._generate_in_flight) or self._load_in_flight is not None

    def loading(self) -> bool:
        """Models are being loaded: nothing else may go to the engine until they are."""
        return self._load_in_flight is not None

    def request_api_answer(self, request: AnswerChat | AnswerCompletion) -> None:
        """Answer an API client's request (its id from API_IDS_FROM on); the answers come as sig_api_answer."""
        self._send(request)

    def replace_stuck(self) -> None:
        """The engine did not end an API reply whose client went away: kill it and start a fresh one."""
        if self._worker.has_child and not self._closing:
            self._replace_stuck()

    def request_devices(self) -> None:
        """Ask the engine process for its devices (sig_devices_listed); `devices` keeps the last answer."""
        self._run_errand(ListDevices(self._next_errand_id()))

    def forget_chat(self, session: str) -> None:
        """A chat was deleted: the engine process forgets its text and saved states (sig_chat_forgotten)."""
        self._run_errand(ForgetChat(self._next_errand_id(), session))

    def request_api_history(self, clear: bool = False) -> None:
        """Ask how big the API clients' history is, after clearing it when `clear` (sig_api_history_measured)."""
        self._run_errand(MeasureApiHistory(self._next_errand_id(), clear))

    def count_picture(self, image: ImageInput) -> int:
        """Ask how many tokens `image` takes with the loaded target's projector (sig_picture_counted, after any
        reply running now); returns the request's id."""
        errand = CountPicture(self._next_errand_id(), image)
        self._run_errand(errand)
        return errand.request_id

    def _next_errand_id(self) -> int:
        self._errand_id += 1
        return self._errand_id

    def _run_errand(self, errand: Errand) -> None:
        self._errands[errand.request_id] = errand
        self._send(errand)

    def cancel(self, request_id: int) -> None:
        """Stop request `request_id` (and every earlier one) at once; the worker checks every round."""
        if self._worker.cancelled_up_to.value < request_id:
            self._worker.cancelled_up_to.value = request_id
        if request_id in self._generate_in_flight and request_id not in self._stuck_timers:
            timer = QTimer(self)
            timer.setSingleShot(True)
            timer.setInterval(READING_GRACE_MS if request_id in self._reading else STOP_GRACE_MS)
            timer.timeout.connect(lambda rid=request_id: self._on_stop_overdue(rid))
            self._stuck_timers[request_id] = timer
            timer.start()

    def _on_stop_overdue(self, request_id: int) -> None:
        self._stuck_timers.pop(request_id, None)
        if request_id in self._generate_in_flight and not self._closing:
            self._replace_stuck()

    # ----- replies

    def _on_message(self, incarnation: int, message: Reply) -> None:
        if incarnation != self._worker.incarnation or self._closing:
            return
        if isinstance(message, (ReplyEnded, ModelsLoaded, LoadFailed)):
            self._worker.mark_log()  # what it wrote so far belongs to work now finished
        if isinstance(message, (EngineEvents, ReplyStarted, ReplyFailed, ReplyEnded)) and _is_api(message):
            self.sig_api_answer.emit(message)
            return
        match message:
            case EngineEvents(events=events):
                self._dispatch_events(events)
            case ReplyFailed():
                self.sig_generation_failed.emit(message)
            case ReplyEnded(request_id=request_id):
                self._generate_in_flight.discard(request_id)
                self._reading.discard(request_id)
                timer = self._stuck_timers.pop(request_id, None)
                if timer is not None:
                    timer.stop()
                self.sig_generation_ended.emit(message)
            case LoadingModel(path=path):
                self._loading_path = path
            case ModelsLoaded(request_id=request_id):
                self._end_load(request_id)
                self.sig_models_loaded.emit(message)
            case LoadFailed(request_id=request_id):
                self._end_load(request_id)
                self.sig_load_failed.emit(message)
            case DevicesListed(request_id=request_id, report=report):
                self._errands.pop(request_id, None)
                self.devices = report
                self.sig_devices_listed.emit(report)
            case ChatForgotten(request_id=request_id):
                self._errands.pop(request_id, None)
                self.sig_chat_forgotten.emit(message)
            case ApiHistoryMeasured(request_id=request_id):
                self._errands.pop(request_id, None)
                self.sig_api_history_measured.emit(message)
            case PictureCounted(request_id=request_id):
                self._errands.pop(request_id, None)
                self.sig_picture_counted.emit(message)

    def _dispatch_events(self, events: tuple) -> None:
        """Tokens and rounds go out together as one sig_stream list; every other record on its own signal."""
        run: list = []
        for event in events:
            if isinstance(event, (TokenEvent, RoundEvent)):
                self._reading.discard(event.request_id)
                run.append(event)
                continue
            if run:
                self.sig_stream.emit(run)
                run = []
            if isinstance(event, ContextEvent):
                if event.request_id in self._generate_in_flight:
                    self._reading.add(event.request_id)
                self.sig_context.emit(event)
            elif isinstance(event, NoticeEvent):
                self.sig_notice.emit(event)
            elif isinstance(event, FinishedEvent):
                self.sig_finished.emit(event)
            else:
                self.sig_engine_event.emit(event)
        if run:
            self.sig_stream.emit(run)

    def _end_load(self, request_id: int) -> None:
        if self._load_in_flight == request_id:
            self._load_in_flight = None
        self._loading_path = None


def _is_api(message: EngineEvents | ReplyStarted | ReplyFailed | ReplyEnded) -> bool:
    if isinstance(message, EngineEvents):
        return bool(message.events) and message.events[0].request_id >= API_IDS_FROM
    return message.request_id >= API_IDS_FROM
