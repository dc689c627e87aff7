"""Continuous batching: every waiting request decoded in one forward pass a step, speculation decided for the step.

A caller (the engine process's loop, a benchmark) drives it:

    scheduler = BatchScheduler(target, draft)      # models loaded with n_seq_max = N
    handle = scheduler.add(DecodeRequest(prompt, config, policy, request_id=...))
    while scheduler.busy:
        for handle, events in scheduler.step().items(): ...   # each request's new events, a FinishedEvent last
    scheduler.cancel(handle)                       # ends that request at the next step; the others go on

Each step is one target decode holding, per decoding request, the tokens its cache lacks (its last token) and
its draft, and chunks of new requests' prompts: a prompt is read between the others' rounds, never in one
long pass while they wait (PROMPT_CHUNK_BUSY tokens a step while others decode; all of it when none do), and a
prompt's last chunk in the same rows as its first round. Requests
join and leave between steps. Each request's round is the single decoder's: planned by its own policy, drafted
by its own copy drafters or by the draft model (for every request in one pass per position, draft_batch.py),
verified by decoder.verify and written by its Reply, so its greedy reply is the one it gets alone. Only the draft
lengths are decided for the step: each policy's plan is shortened where the step's expected tokens per second
over every request is higher, or where it would slow another request below its pace with no drafts
(app.engine.speculation.batch_plan), and such a round says so (kind "batch").
"""

from __future__ import annotations

import itertools
import time
from collections import deque
from dataclasses import dataclass
from typing import Callable, Optional, Sequence

from app.engine.config import MAX_OUTPUT_ROWS
from app.engine.events import EngineEvent
from app.engine.local.batch.draft_batch import DraftAsk, draft_all
from app.engine.local.batch.hooks import SequenceHooks
from app.engine.local.batch.sequences import Rows, Sequences
from app.engine.local.decoding.reply import Reply, RowWindow, unwritten
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.decoding.round_step import USUAL_CATCH_UP, RoundStep, first_round_rest, verify_rows
from app.engine.local.kv_states.saved_states import shared_prefix
from app.engine.local.llama_model import LoadedModel
from app.engine.local.vision.projector import MediaPrompt
from app.engine.local.thread_governor import ThreadChange, ThreadGovernor
from app.engine.speculation.batch_plan import fit_plans
from app.engine.speculation.rounds import FIRST_ROUND_DRAFT

# Prompt tokens read per step while other replies are being written: a step then costs about what a prompt chunk
# costs, so a running reply waits at most that long for its next token.
PROMPT_CHUNK_BUSY = 64


@dataclass
class _Running:
    handle: int
    request: DecodeRequest
    hooks: SequenceHooks
    reply: Reply
    seq: int
    read: int  # prompt tokens the target's sequence holds
    decoding: bool = False


@dataclass
class _Round:
    """A decoding request's round in this step."""

    running: _Running
    step: RoundStep
    pending: int = 1  # written tokens its cache lacks (the last one, and a thinking budget's closing)
    behind: int = 0  # tokens the draft model would read before drafting for it
    reads_rest: bool = False  # its first round, with the rest of its prompt read in the same rows

    @property
    def rows(self) -> int:
        """The most rows its verify pass takes: the pending tokens, the planned draft, or verify_rows' padding."""
        return self.pending + max(self.step.plan.k, FIRST_ROUND_DRAFT if self.pending > 1 else 0)


class BatchScheduler:
    """Decodes many requests side by side on `target` (and `draft`, both loaded with n_seq_max sequences). Call
    from the engine process's main thread only; `cancel` too (a request is ended at the next step). `draft` holds
    at least the target's n_seq_max sequences."""

    def __init__(
        self,
        target: LoadedModel,
        draft: Optional[LoadedModel] = None,
        *,
        prompt_chunk: int = PROMPT_CHUNK_BUSY,
        clock: Callable[[], float] = time.perf_counter,
        governor: Optional[ThreadGovernor] = None,
    ):
        self.target, self.draft = target, draft
        # Threads on Auto follow the machine's load between passes, as the single decoder's do: a batch that starts
        # asks how busy the machine is, each pass is timed, and every request in the batch is told of a change.
        self.governor = governor
        self.prompt_chunk = prompt_chunk
        self.clock = clock
        self._handles = itertools.count(1)
        self.reset()

    def reset(self) -> None:
        """Forget every request, and what the sequences hold (after a step failed: what llama.cpp kept is not
        known). Handles given before are never given again."""
        for old in (getattr(self, "seqs", None), getattr(self, "draft_seqs", None)):  # None when first made
            if old is not None:
                old.retire()
        self.seqs = Sequences(self.target, self.target.n_seq_max)
        self.draft_seqs = Sequences(self.draft, self.target.n_seq_max) if self.draft is not None else None
        self._waiting: deque[tuple[int, DecodeRequest, SequenceHooks]] = deque()
        self._running: list[_Running] = []
        self._cancelled: set[int] = set()

    @property
    def busy(self) -> bool:
        """Whether any request is waiting or running."""
        return bool(self._waiting or self._running or self._cancelled)

    @property
    def running(self) -> int:
        return len(self._running)

    @property
    def waiting(self) -> int:
        return len(self._waiting)

    def add(self, request: DecodeRequest, hooks: SequenceHooks = SequenceHooks()) -> int:
        """Queue a request (`hooks`: what it is told of its sequence); its handle. It joins at the next step with a
        free sequence. Raises PromptTooLongError when its prompt cannot fit the context with room for one new token."""
        request.check_room(self.target.n_ctx)
        handle = next(self._handles)
        self._waiting.append((handle, request, hooks))
        return handle

    def cancel(self, handle: int) -> None:
        """End one request at the next step (with stop reason "cancelled"); the others go on."""
        self._cancelled.add(handle)

    # -- a step ---------------------------------------------------------------------------------------------------

    def step(self) -> dict[int, list[EngineEvent]]:
        """One forward pass over every running request; each request's new events by handle (a FinishedEvent
        last when it ended)."""
        out: dict[int, list[EngineEvent]] = {}
        self._end_cancelled(out)
        idle = not self._running
        self._admit(out)
        if idle and self._running and self.governor is not None:
            self._threads(self.governor.before_reply(), out)
        started = self.clock()
        rounds = self._plan(out)
        prompt_rows = self._prompt_part(rounds)
        self._fit_to_step(rounds, sum(len(tokens) for _, tokens in prompt_rows), len(prompt_rows))
        draft_s, drafted = self._draft(rounds)
        t_verify = self.clock()
        parts = [
            Rows(r.running.seq, verify_rows(r.running.reply.written, r.pending, r.step.draft.tokens), r.pending - 1)
            for r in rounds
        ]
        parts += [Rows(running.seq, tokens, len(tokens)) for running, tokens in prompt_rows]
        windows = self.seqs.decode(parts) if parts else []
        done = self.clock()
        # The pass's cost is learned once per policy (requests of one chat share theirs), and only without prompt
        # rows, a rest read in a first round's included (they cost what rows with logits do not); a request alone
        # learns it as the single decoder does.
        rows = sum(len(p.tokens) for p in parts) if len(rounds) > 1 else 0
        reads = bool(prompt_rows) or any(r.reads_rest for r in rounds)
        taught: set[int] = set()
        for r, window in zip(rounds, windows):
            policy = id(r.running.request.policy)
            learn = policy not in taught and not reads
            if r.reads_rest:
                r.running.reply.prompt_done = done
            taught.add(policy)
            # The draft model's time, shared by the tokens it drafted: what drafting a token costs in a batch.
            draft = r.step.draft
            share = draft_s * len(draft.tokens) / drafted if drafted and draft.source == "model" else 0.0
            self._finish_round(r, window, out, started, share, done - t_verify if learn else 0.0, rows)
        for running, tokens in prompt_rows:
            running.read += len(tokens)
            if running.read >= len(running.request.prompt) - 1:
                running.decoding = True
                running.reply.prompt_done = done
        if self.governor is not None and parts:
            self._threads(self.governor.observe(sum(len(p.tokens) for p in parts), done - t_verify), out)
            if not self._running:
                self.governor.settle()  # the batch ended: a trial still running keeps what it chose, or goes back
        return out

    def _threads(self, change: Optional[ThreadChange], out: dict[int, list[EngineEvent]]) -> None:
        """Tell every running request that the models' threads changed (after its last round)."""
        if change is None:
            return
        for running in self._running:
            reply = running.reply
            out.setdefault(running.handle, []).extend(reply.threads_changed(change, reply.tally.rounds - 1))

    def _end_cancelled(self, out: dict[int, list[EngineEvent]]) -> None:
        for handle in list(self._cancelled):
            waiting = next((w for w in self._waiting if w[0] == handle), None)
            if waiting is not None:
                self._waiting.remove(waiting)
                request = waiting[1]
                out[handle] = unwritten(request)
            running = next((r for r in self._running if r.handle == handle), None)
            if running is not None:
                running.reply.stop_reason = "cancelled"
                self._end(running, out)
        self._cancelled.clear()

    def _admit(self, out: dict[int, list[EngineEvent]]) -> None:
        while self._waiting and self.seqs.free:
            handle, request, hooks = self._waiting[0]
            prompt = request.prompt
            seq = self.seqs.take(prompt, request.config.kept_scope)
            assert seq is not None
            drafts = self.draft_seqs
            if drafts is not None:
                drafts.claim(seq, request.config.kept_scope)
            if hooks.on_admit is not None:
                hooks.on_admit(seq)
            reused = self.seqs.keep_prefix(seq, prompt, leave=1)
            if request.media is not None:
                reused = request.media.start_of_picture_around(reused)
                self.seqs.truncate(seq, reused)  # nothing to cut unless the kept text ended inside a picture
            room = self.seqs.make_room(len(prompt) - reused + 1)
            if drafts is not None:
                if room and request.use_model:
                    seen = request.seen_by_draft(prompt)
                    room = drafts.make_room(len(seen) - drafts.keep_prefix(seq, seen, leave=1) + 1)
            if not room:
                self._free_sequence(seq)
                if self._running:
                    return  # it waits for a running reply to end and leave its cells
                self._waiting.popleft()
                out[handle] = unwritten(request, reason="context_full")
                continue
            self._waiting.popleft()
            reply = Reply(self.target, request, clock=self.clock)
            reply.begin()
            reply.reused = reused
            running = _Running(handle, request, hooks, reply, seq, reused, decoding=reused >= len(prompt) - 1)
            if running.decoding:
                reply.prompt_done = self.clock()
            self._running.append(running)
            out.setdefault(handle, [])

    def _plan(self, out: dict[int, list[EngineEvent]]) -> list[_Round]:
        """Each decoding request's round as its own policy plans it; requests out of room end here."""
        rounds: list[_Round] = []
        decoding = [r for r in self._running if r.decoding]
        for running in decoding + self._reading_rest_in_round(bool(decoding)):
            reads_rest = not running.decoding
            running.decoding = True
            reply, request = running.reply, running.request
            closing = reply.closing()
            if closing:
                out.setdefault(running.handle, []).extend(reply.write_closing(closing))
            written = reply.written
            pending = len(written) - len(self.seqs.cached[running.seq])
            room = self.seqs.room - (pending - 1)
            if room <= 0:
                reply.stop_reason = "context_full"
                self._end(running, out)
                continue
            has_model = request.use_model and self.draft_seqs is not None
            seen = request.seen_by_draft(written)
            behind = (
                len(seen) - shared_prefix(self.draft_seqs.cached[running.seq], seen)
                if has_model and self.draft_seqs is not None and request.config.speculative
                else 0
            )
            step = RoundStep.planned(reply, room, has_model=has_model, behind=behind)
            rounds.append(_Round(running, step, pending=pending, behind=behind, reads_rest=reads_rest))
        return rounds

    def _reading_rest_in_round(self, others: bool) -> list[_Running]:
        """The requests reading their prompt whose rest is read in their first round's rows (first_round_rest),
        oldest first. The rests that join are no longer than a step's prompt chunk in all while other replies are
        being written (`others`); a prompt with pictures reads them in passes of their own first."""
        room = first_round_rest(self.target.n_batch)
        if others:
            room = min(room - len(self._running), self.prompt_chunk)
        joining: list[_Running] = []
        for running in self._running:
            if running.decoding or running.request.media is not None:
                continue
            rest = len(running.request.prompt) - running.read
            if rest <= room:
                joining.append(running)
                room -= rest
        return joining

    def _prompt_part(self, rounds: Sequence[_Round]) -> list[tuple[_Running, list[int]]]:
        """The prompt tokens read this step: the reading requests' next chunks, oldest first, PROMPT_CHUNK_BUSY
        tokens in all while replies are being written (all the batch allows when none are)."""
        reading = [r for r in self._running if not r.decoding]
        budget = self.target.n_batch - sum(r.rows for r in rounds)
        if rounds:
            budget = min(budget, self.prompt_chunk - sum(r.pending for r in rounds if r.reads_rest))
        parts: list[tuple[_Running, list[int]]] = []
        picture_read = False  # one picture decoded a step: as long as a prompt chunk
        for running in reading:
            if budget <= 0:
                break  # the rest wait; drafts that fill the batch shrink for prompt rows at the next step
            prompt = running.request.prompt
            end = min(len(prompt) - 1, running.read + budget)
            media = running.request.media
            if media is not None:
                stop, read = self._read_picture(running, media, may_read=not picture_read)
                end, picture_read = min(end, stop), picture_read or read
            tokens = list(prompt[running.read : end])
            budget -= len(tokens)
            # A fixed draft length drafts with the draft model from the first round: it reads the prompt in step.
            # A controller may never draft with it (on a CPU it rarely pays) and weighs what the draft model would
            # read before drafting when it decides to (model_behind), as the single decoder does: reading in step
            # would be work it may never use.
            if self.draft_seqs is not None and running.request.use_model and not running.request.policy.uses_costs:
                self.draft_seqs.read([(running.seq, tokens)])
            parts.append((running, tokens))
        if not rounds and not picture_read and not any(tokens for _, tokens in parts):
            # Nothing to step but pictures being encoded: wait for one rather than spin.
            for running in reading:
                if running.request.media is not None:
                    running.request.media.wait_for_encoding()
        return parts

    def _read_picture(self, running: _Running, media: MediaPrompt, may_read: bool) -> tuple[int, bool]:
        """The picture that starts where `running`'s prompt reading stands, if one does: its encoding is started on
        the projector's thread (the other requests step on while it runs), and once it has ended and `may_read`,
        its embeddings are decoded into the request's sequence (in a pass of its own before the step's). Returns
        (the index where this step's text reading stops: the next picture's start, or the prompt's length; whether
        a picture was decoded)."""
        prompt, seq = running.request.prompt, running.seq
        picture = media.picture_at(running.read)
        decoded = False
        if picture is not None:
            media.start_encoding(picture)
            if may_read and media.encoded(picture):
                media.decode_encoded(self.target, picture, seq, len(self.seqs.cached[seq]))
                self.seqs.cached[seq].extend(prompt[picture.start : picture.start + picture.n_tokens])
                running.read += picture.n_tokens
                decoded = True
        return min((p.start for p in media.pictures if p.start >= running.read), default=len(prompt)), decoded

    def _fit_to_step(self, rounds: list[_Round], prompt_rows: int, readers: int) -> None:
        """Shorten the policies' drafts where the step's expected tokens per second is higher without them, or
        where they would slow another request below its pace with no drafts (batch_plan's "nobody slower"), a
        request reading its prompt (`readers` of them) included: its first token waits for every step."""
        if not rounds or (len(rounds) == 1 and not prompt_rows):
            return  # one request alone: its own policy's round, as the single decoder runs it
        base = sum(r.pending for r in rounds) + prompt_rows
        plans = fit_plans(
            [(r.running.request.policy, r.step.plan) for r in rounds],
            base,
            MAX_OUTPUT_ROWS - len(rounds),
            behind=[r.behind for r in rounds],
            readers=readers,
        )
        for r, plan in zip(rounds, plans):
            r.step.plan = plan

    def _draft(self, rounds: Sequence[_Round]) -> tuple[float, int]:
        """Every round's draft: copies from their proposals, the draft model's for all in one batch. Returns the
        draft model's time, and the tokens it drafted (when none of its drafts first read a long catch-up; else
        (0.0, 0): not a cost to learn from)."""
        asks: list[tuple[RoundStep, DraftAsk]] = []
        for r in rounds:
            step, request = r.step, r.running.request
            step.copy()
            if step.model_drafts and self.draft_seqs is not None:
                reply = step.reply
                ask = DraftAsk(
                    r.running.seq,
                    request.seen_by_draft(reply.written),
                    step.plan.k,
                    reply.sampler,
                    reply.rng,
                    request.config.draft_p_min,
                    step.plan.stop_below,
                )
                asks.append((step, ask))
        if not asks or self.draft_seqs is None:
            return 0.0, 0
        began = self.clock()
        for (step, _), draft in zip(asks, draft_all(self.draft_seqs, [ask for _, ask in asks])):
            step.draft = draft
        spent = self.clock() - began
        drafted = sum(len(step.draft.tokens) for step, _ in asks)
        if not drafted or any(step.draft.caught_up > USUAL_CATCH_UP for step, _ in asks):
            return 0.0, 0
        return spent, drafted

    def _finish_round(
        self,
        r: _Round,
        window: RowWindow,
        out: dict[int, list[EngineEvent]],
        started: float,
        draft_s: float,
        verify_s: float,
        rows: int,
    ) -> None:
        running, step = r.running, r.step
        step.judge(window)
        step.learn(draft_s if step.draft.source == "model" else 0.0, verify_s, rows)
        events = out.setdefault(running.handle, [])
        events += step.recorded(self.clock() - started, self.target.n_threads)
        events += step.written(window)
        self.seqs.truncate(running.seq, len(running.reply.written) - 1)
        if running.reply.stop_reason:
            self._end(running, out)

    def _free_sequence(self, seq: int) -> None:
        self.seqs.release(seq)
        if self.draft_seqs is not None:
            self.draft_seqs.release(seq)

    def _end(self, running: _Running, out: dict[int, list[EngineEvent]]) -> None:
        self._running.remove(running)
        if running.hooks.on_end is not None:
            running.hooks.on_end(running.seq)
        self._free_sequence(running.seq)
        out.setdefault(running.handle, []).extend(running.reply.finish())
