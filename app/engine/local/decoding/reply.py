"""One request's reply as its rounds keep tokens: its written tokens, text, stop reason and statistics.

The single decoder (single.py) and the batch (app.engine.local.batch.scheduler) run every request through a Reply, so a token is written, counted and stopped on in one place.
"""

from __future__ import annotations

import time
from typing import Callable, Optional, Protocol, Sequence

import numpy as np

from app.engine.config import MAX_DRAFT
from app.engine.events import (
    DraftSource,
    EngineEvent,
    FinishedEvent,
    GenerationStats,
    RoundEvent,
    TokenChoice,
    TokenEvent,
    TokenLogprobs,
    ThreadsEvent,
    TokenSource,
    decode_speed,
)
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.llama_model import LoadedModel
from app.engine.local.thread_governor import ThreadChange
from app.engine.local.sampling import Penalties, Sampler, log_probabilities
from app.engine.local.decoding.text_stream import TextStream
from app.engine.reasoning.splitter import ReplySplitter
from app.engine.speculation.drafters import Draft
from app.engine.speculation.policy import Plan
from app.engine.speculation.tally import Tally


class LogitRows(Protocol):
    """The target's logits rows of one request in the last decode, numbered from its first row."""

    def logits(self, row: int) -> np.ndarray: ...


class RowWindow:
    """A request's logits rows of the last forward pass, numbered from its first row with logits."""

    def __init__(self, model: LoadedModel, start: int):
        self._model = model
        self._start = start

    def logits(self, row: int) -> np.ndarray:
        return self._model.logits(self._start + row)


class Reply:
    """A request's reply in progress. `written` is the prompt and every kept token (what the target's context
    holds); `stop_reason` is "" until the reply ends. Every event goes through `split` (the reply's thinking told
    from its answer)."""

    def __init__(self, target: LoadedModel, request: DecodeRequest, *, clock: Callable[[], float] = time.perf_counter):
        config = request.config
        self.target = target
        self.request = request
        self.config = config
        self.request_id = request.request_id
        self.clock = clock
        self.grammar = request.grammar
        self.split = request.splitter if request.splitter is not None else ReplySplitter(split=False)
        self.budget = max(0, config.thinking_budget)
        self.budget_spent = False
        self.sampler = Sampler.from_config(config)
        self.penalties = Penalties.from_config(config)
        self.rng = np.random.default_rng(config.seed)
        self.prompt_len = len(request.prompt)
        self.written = list(request.prompt)
        self.text_stream = TextStream()
        self.pieces: list[str] = []
        self.tally = Tally()
        self.emitted = 0
        self.started = clock()
        self.prompt_done = self.started
        self.reused = 0  # prompt tokens the cache already held
        self.first_token_at: Optional[float] = None
        self.stop_reason = ""

    def begin(self) -> None:
        """The reply starts: its policy and its n-gram drafter are told (before its prompt is read)."""
        self.request.policy.begin_request()
        if self.request.ngram is not None:
            self.request.ngram.start_reply(self.prompt_len)

    def token_event(
        self,
        token: int,
        source: TokenSource,
        drafter: Optional[DraftSource],
        round_index: int,
        rows: Optional[LogitRows] = None,
        row: int = -1,
    ) -> list[EngineEvent]:
        """`row`: the row of `rows` (the last decode's logits) that chose `token`, for its log-probabilities."""
        target, config = self.target, self.config
        data = target.token_bytes(token)
        text = self.text_stream.feed(data)
        self.pieces.append(text)
        if self.penalties is not None:
            self.penalties.add(token)
        # A special token shows as nothing, but may be (part of) a marker, e.g. Harmony's <|channel|>.
        special = target.token_text(token) if not data and target.is_control(token) else ""
        logprobs = (
            _logprobs(target, rows, row, token, config.top_logprobs)
            if config.logprobs and rows is not None and row >= 0
            else None
        )
        return self.split.feed(
            TokenEvent(
                self.request_id,
                self.emitted,
                token,
                text,
                source,
                drafter,
                round_index,
                logprobs=logprobs,
                markup=special,
            ),
            special,
        )

    def closing(self) -> list[int]:
        """When the thinking budget is spent now: its end marker's tokens, to be written as the model's own (as
        llama-server's --reasoning-budget does); [] otherwise, and when they would not fit."""
        split, budget = self.split, self.budget
        if not (
            budget
            and not self.budget_spent
            and self.grammar is None
            and split.thinking
            and split.reasoning_tokens >= budget
        ):
            return []
        self.budget_spent = True
        closing = self.target.tokenize(split.family.close_text, add_special=False, parse_special=True)
        if (
            closing
            and self.emitted + len(closing) < self.config.max_tokens
            and len(self.written) + len(closing) < self.target.n_ctx
        ):
            return closing
        return []

    def write_closing(self, closing: Sequence[int]) -> list[EngineEvent]:
        """The closing tokens written, as the target's own."""
        events: list[EngineEvent] = []
        for token in closing:
            self.written.append(token)
            events += self.token_event(token, "target", None, -1)
            self.emitted += 1
        return events

    def k_max(self, room: int) -> int:
        """The longest draft this round allows: the verify batch [last, draft...] needs k + 1 free positions of
        the `room` left and k + 1 logit rows (at most MAX_DRAFT + 1); the reply needs k + 1 more tokens."""
        k_max = max(0, min(room - 1, self.config.max_tokens - self.emitted - 1, MAX_DRAFT))
        if self.budget and not self.budget_spent and self.split.thinking:
            k_max = max(0, min(k_max, self.budget - self.split.reasoning_tokens - 1))  # none writes past it
        return k_max

    def round_event(
        self, plan: Plan, draft: Draft, accepted: int, own: int, time_s: float, threads: int
    ) -> list[EngineEvent]:
        """The round's record; the tally counts it."""
        index = self.tally.rounds
        self.tally.add(len(draft.tokens), accepted, draft.source)
        target = self.target
        return self.split.feed(
            RoundEvent(
                self.request_id,
                draft.source,
                plan.k,
                len(draft.tokens),
                accepted,
                plan.reason,
                index=index,
                proposed=tuple(draft.tokens),
                proposed_text=tuple(piece(target, t) for t in draft.tokens),
                own=own,
                own_text=piece(target, own),
                time_s=time_s,
                threads=threads,
                kind=plan.kind,
                expected=plan.expected,
            )
        )

    def threads_changed(self, change: Optional[ThreadChange], after_round: int) -> list[EngineEvent]:
        """The models' threads changed after round `after_round` (none: nothing to say)."""
        if change is None:
            return []
        return self.split.feed(ThreadsEvent(self.request_id, change.before, change.after, change.reason, after_round))

    def keep(self, draft: Draft, accepted: int, own: int, round_index: int, rows: LogitRows) -> list[EngineEvent]:
        """Write the round's kept tokens (the accepted draft, then the target's own) until the reply stops."""
        events: list[EngineEvent] = []
        proposer: Optional[DraftSource] = None if draft.source == "none" else draft.source
        for position, token in enumerate([*draft.tokens[:accepted], own]):
            source: TokenSource = "draft" if position < accepted else "target"
            drafter = proposer if position < accepted else None
            if self.target.is_end_of_generation(token) and not self.config.ignore_eos:
                self.stop_reason = "eos"
                break
            self.written.append(token)
            if self.grammar is not None:
                self.grammar.accept(token)
            if self.first_token_at is None:
                self.first_token_at = self.clock()
            events += self.token_event(token, source, drafter, round_index, rows, position)
            self.emitted += 1
            if self.emitted >= self.config.max_tokens:
                self.stop_reason = "max_tokens"
                break
        return events

    def finish(self) -> list[EngineEvent]:
        """The reply's last events: a dangling partial character, then its FinishedEvent; the request's `on_written`
        is given what was written."""
        events: list[EngineEvent] = []
        tail = self.text_stream.flush()
        if tail:
            self.pieces.append(tail)
            # The reply's texts must add up to the reply: a dangling partial character is flushed as its own event.
            events += self.split.feed(TokenEvent(self.request_id, self.emitted, -1, tail, "target"))
        ended = self.clock()
        first = self.first_token_at
        stats = GenerationStats(
            tokens=self.emitted,
            tokens_per_second=decode_speed(self.emitted, max(ended - self.prompt_done, 1e-9)),
            ttft_s=(first - self.started) if first is not None else 0.0,
            stop_reason=self.stop_reason,
            prompt_tokens=self.prompt_len,
            prompt_cached=self.reused,
            prompt_eval_s=self.prompt_done - self.started,
            elapsed_s=ended - self.started,
            **self.tally.stats_fields(),
        )
        events += self.split.feed(FinishedEvent(self.request_id, "".join(self.pieces), stats))
        if self.request.on_written is not None:
            self.request.on_written(self.written)
        return events


def unwritten(request: DecodeRequest, reused: int = 0, reason: str = "cancelled") -> list[EngineEvent]:
    """The events of a reply that ended before its first round (cancelled while its prompt was read or waited, or
    with no room in the context): `reused` prompt tokens the cache held."""
    stats = GenerationStats(stop_reason=reason, prompt_tokens=len(request.prompt), prompt_cached=reused)
    split = request.splitter if request.splitter is not None else ReplySplitter(split=False)
    return split.feed(FinishedEvent(request.request_id, "", stats))


def _logprobs(target: LoadedModel, rows: LogitRows, row: int, token: int, top: int) -> TokenLogprobs:
    """`token`'s log-probability from logits row `row` of `rows`, with the `top` likeliest."""

    def choice(token_id: int, logprob: float) -> TokenChoice:
        data = target.token_bytes(token_id) or target.token_text(token_id).encode("utf-8")
        return TokenChoice(token_id, data, logprob)

    chosen, best = log_probabilities(rows.logits(row), token, top)
    return TokenLogprobs(choice(token, chosen), tuple(choice(i, lp) for i, lp in best))


def piece(target: LoadedModel, token: int) -> str:
    """A token's own text for display (a piece of a multi-byte character shows as a replacement mark)."""
    return target.token_bytes(token).decode("utf-8", errors="replace")
