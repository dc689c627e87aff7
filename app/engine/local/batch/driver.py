"""The engine's replies decoded side by side: each reply an iterator of its own events, all advanced by one step.

A front end drives many replies at once (the engine process's loop, app.engine.host.worker): it reads each reply's
events until the reply yields a WaitingEvent (nothing new until the next step), goes on to the next reply, and
calls `step` once every reply waits. Requests join between steps, so a reply asked for while others are being
written starts at the next step. The replies' events are kept per request until their iterator reads them.

Only the engine process's main thread may use a BatchDriver (it drives the models).
"""

from __future__ import annotations

import traceback
from contextlib import contextmanager
from typing import Callable, Iterator, Optional

from app.engine.errors import EngineError
from app.engine.events import EngineEvent, FinishedEvent, WaitingEvent
from app.engine.local.batch.hooks import SequenceHooks
from app.engine.local.batch.scheduler import BatchScheduler
from app.engine.local.thread_governor import ThreadGovernor
from app.engine.local.batch.sequences import SequenceSlot
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.llama_model import LoadedModel
from app.engine.protocol import CancelSignal


class BatchDriver:
    """Replies of `target` (with `draft`, both loaded with the same n_seq_max) decoded in one batch."""

    def __init__(
        self, target: LoadedModel, draft: Optional[LoadedModel] = None, governor: Optional[ThreadGovernor] = None
    ):
        self.scheduler = BatchScheduler(target, draft, governor=governor)
        self._mail: dict[int, list[EngineEvent]] = {}  # each running reply's events not read yet, by handle
        self._failed: dict[int, str] = {}  # replies a failed step ended: why, in a sentence

    @property
    def busy(self) -> bool:
        """Whether a reply is waiting for a step."""
        return self.scheduler.busy

    def reply(
        self, request: DecodeRequest, cancel: Optional[CancelSignal] = None, hooks: SequenceHooks = SequenceHooks()
    ) -> Iterator[EngineEvent]:
        """The reply's events, a WaitingEvent between steps, and its FinishedEvent last (`hooks`: what it is told of
        its sequence). Cancelled (or the iterator
        closed early), it ends at the next step, with stop reason "cancelled"; the other replies go on. Raises
        PromptTooLongError (at the first event) when the prompt cannot fit, EngineError when a step failed."""
        handle = self.scheduler.add(request, hooks)
        self._mail[handle] = []
        finished = stopping = False
        try:
            while True:
                if not stopping and cancel is not None and cancel.is_set():
                    self.scheduler.cancel(handle)
                    stopping = True
                failure = self._failed.pop(handle, None)
                if failure is not None:
                    finished = True  # the batch it was in has started over without it
                    raise EngineError(failure)
                events, self._mail[handle] = self._mail[handle], []
                if not events:
                    yield WaitingEvent(request.request_id)
                    continue
                for event in events:
                    finished = finished or isinstance(event, FinishedEvent)
                    yield event
                if finished:
                    return
        finally:
            if not finished and handle not in self._failed:
                self.scheduler.cancel(handle)  # a reader gone (a client that left): its sequence is freed
            self._mail.pop(handle, None)
            self._failed.pop(handle, None)

    def slots(self, seq: int) -> tuple[SequenceSlot, Optional[SequenceSlot]]:
        """Sequence `seq` of the target and of the draft model, as kept conversation states see them."""
        scheduler = self.scheduler
        return (
            SequenceSlot(scheduler.seqs, seq),
            SequenceSlot(scheduler.draft_seqs, seq) if scheduler.draft_seqs is not None else None,
        )

    def forget(self, seq: int) -> None:
        """Empty sequence `seq` of both models (a deleted chat's), unless a reply is being written in it."""
        for sequences in (self.scheduler.seqs, self.scheduler.draft_seqs):
            if sequences is not None:
                sequences.empty_if_free(seq)

    @contextmanager
    def lent(self) -> Iterator[None]:
        """The models' contexts lent to their own single-sequence decode (the cost measurement between requests):
        it writes sequence 0 at the positions that sequence holds. Never while a reply runs. Should the lent work
        fail, what llama.cpp kept is not known: the batch starts over."""
        assert not self.scheduler.busy, "the context is lent only between requests"
        lent = [sequences for sequences in (self.scheduler.seqs, self.scheduler.draft_seqs) if sequences is not None]
        for sequences in lent:
            sequences.lend()
        try:
            yield
        except BaseException:
            self.scheduler.reset()
            raise
        for sequences in lent:
            sequences.take_back()

    def idle_work(self, measure: Callable[[], bool], measuring: bool) -> bool:
        """Between requests: one forward pass of `measure` (the costs' measurement, while `measuring`) in the lent
        context, or a step that ends replies whose readers left (their sequences come free). False when there is
        nothing to do now."""
        if not measuring:
            return False  # nothing to measure: the sequences keep what they hold
        if self.busy:
            return self.step()
        with self.lent():  # the measurement decodes into sequence 0, where that sequence ends
            return measure()

    def step(self) -> bool:
        """One forward pass over every running reply; False when none is running or waiting. A step that fails
        ends every reply in it with an EngineError (each raises it at its next event), and the batch starts over."""
        if not self.scheduler.busy:
            return False
        try:
            out = self.scheduler.step()
        except Exception as exc:
            traceback.print_exc()
            sentence = f"Decoding the batch failed ({type(exc).__name__}: {exc})."
            for handle in self._mail:
                self._failed[handle] = sentence
            self.scheduler.reset()
            return True
        for handle, events in out.items():
            if handle in self._mail:
                self._mail[handle].extend(events)
        return True
