"""One server reply read event by event: chunks checked, tokens and draft rounds told, the request's limits kept.

The client keeps the request's own limits, whatever the server does: no more tokens than max_tokens, no more text
than such a reply can hold, no more events than it can take, and an overall deadline (reply_deadline_s). The
engine (app.engine.remote.engine) opens the stream and hands each event to a RemoteReply; what the reply yields is
what the window and the API see.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any, Iterator, Optional

from app.engine.events import (
    DraftSource,
    EngineEvent,
    FinishedEvent,
    GenerationStats,
    RoundEvent,
    TokenEvent,
    decode_speed,
)
from app.engine.remote.chunks import MalformedEvent, ServerTimings, parse_chunk
from app.engine.remote.reply_parts import ReplyParts
from app.engine.remote.server_drafts import ServerDraftTracker
from app.engine.remote.server_errors import READ_TIMEOUT_S, ConnectionDropped, ServerError, silent_sentence
from app.engine.remote.tool_calls import StreamedCalls
from app.engine.speculation.tally import Tally

# What a reply of max_tokens tokens may bring, whatever the server says: text (a token's text is rarely over a few
# dozen characters), events (llama-server sends one per token, plus a few), and time (the slowest server taken for
# working is one token a second, after a first token as late as the read timeout allows).
MAX_CHARS_PER_TOKEN = 1024
MIN_REPLY_CHARS = 64 << 10
EVENTS_PER_TOKEN = 4
EXTRA_EVENTS = 64
SLOWEST_S_PER_TOKEN = 1.0
# Whatever max_tokens asks, no reply is waited for longer than this (a server trickling a token a minute would
# otherwise hold a large request for days).
MAX_REPLY_DEADLINE_S = 4 * 3600.0


def reply_deadline_s(max_tokens: int) -> float:
    """How long a reply of `max_tokens` tokens may take in all before the client gives up on the server."""
    return min(READ_TIMEOUT_S + max_tokens * SLOWEST_S_PER_TOKEN, MAX_REPLY_DEADLINE_S)


class RemoteReply:
    """The reply to one request, built from the server's events as they come. Used from the thread that reads the
    stream only.

    `shown`: the server's URL as error messages show it; `silent_s`: how long a stream may bring nothing (empty
    events keep a stream open as comments do, and are given up on alike)."""

    def __init__(self, request_id: int, max_tokens: int, shown: str, silent_s: float):
        self.request_id = request_id
        self.max_tokens = max(1, max_tokens)
        self.max_chars = max(MIN_REPLY_CHARS, self.max_tokens * MAX_CHARS_PER_TOKEN)
        self.max_events = self.max_tokens * EVENTS_PER_TOKEN + EXTRA_EVENTS
        self._shown = shown
        self._silent_s = silent_s
        self.ended = False  # all that was asked for has come: the caller stops reading
        self._tracker = ServerDraftTracker()
        self._parts = ReplyParts()
        self._tally = Tally()
        self._calls = StreamedCalls()
        self._started = time.monotonic()
        self._last_token_at = self._started
        self._first_at: Optional[float] = None
        self._index = 0
        self._chars = 0
        self._events = 0
        self._finish_reason = ""
        self._timings: Optional[ServerTimings] = None
        self._completion_tokens: Optional[int] = None
        self._prompt_tokens: Optional[int] = None

    def read(self, event: Any) -> Iterator[EngineEvent]:
        """The events one of the server's stream events brings; sets `ended` once the reply has all it may hold."""
        self._events += 1
        try:
            chunk = parse_chunk(event, self.max_tokens)
        except MalformedEvent as exc:
            raise ServerError(
                f"The server at {self._shown} sent a malformed event ({exc}); the reply stops here."
            ) from None
        if chunk.timings is not None:
            self._timings = chunk.timings
        if chunk.completion_tokens is not None:
            self._completion_tokens = chunk.completion_tokens
        if chunk.prompt_tokens is not None:
            self._prompt_tokens = chunk.prompt_tokens
        if chunk.reasoning_tokens is not None:
            self._parts.server_reasoning_tokens = chunk.reasoning_tokens
        reasoning = chunk.reasoning[: max(0, self.max_chars - self._chars)]
        self._chars += len(reasoning)
        text = chunk.text[: max(0, self.max_chars - self._chars)]
        self._chars += len(text)
        yield from self._told(text, chunk.timings, reasoning)
        self._calls.feed(chunk.tool_calls)
        if text or reasoning or chunk.tool_calls or chunk.finish_reason:
            self._last_token_at = time.monotonic()
        elif time.monotonic() - self._last_token_at > self._silent_s:
            cls = ConnectionDropped if self._index else ServerError
            raise cls(silent_sentence(self._shown, self._silent_s, bool(self._index)))
        if chunk.finish_reason:
            self._finish_reason = chunk.finish_reason
        if self._index >= self.max_tokens or self._chars >= self.max_chars or self._events >= self.max_events:
            self._finish_reason = self._finish_reason or "length"  # all that was asked for: the reply ends here
            self.ended = True

    def _told(self, text: str, timings: Optional[ServerTimings], reasoning: str) -> Iterator[EngineEvent]:
        """The draft rounds and tokens the tracker tells apart in this event's text."""
        tokens, found_rounds = self._tracker.feed(text, timings, reasoning)
        for r in found_rounds:
            self._tally.add(r.drafted, r.accepted, "model")
            self._parts.on_round(r.index, r.drafted)
            # The server reports counts only: what it proposed and which token it wrote itself stay unknown.
            yield RoundEvent(
                self.request_id,
                "model",
                r.drafted,
                r.drafted,
                r.accepted,
                "set by the server",
                index=r.index,
                kind="server",
            )
        for token in tokens:
            if token.counted and self._index >= self.max_tokens:
                break
            if self._first_at is None:
                self._first_at = time.monotonic()
            self._parts.on_token(token.text, token.part, token.counted, token.source == "draft", token.round)
            drafter: Optional[DraftSource] = "model" if token.source == "draft" else None
            yield TokenEvent(
                self.request_id, self._index, -1, token.text, token.source, drafter, token.round, token.part
            )
            self._index += int(token.counted)

    def finish(self) -> Iterator[EngineEvent]:
        """What the tracker held back, the tool calls as text, and the FinishedEvent; a clear error for a stream
        that ended without saying why."""
        request_id = self.request_id
        for tail in self._tracker.flush() if self._chars <= self.max_chars else []:
            self._parts.on_token(tail.text, tail.part, False, False, -1)
            yield TokenEvent(request_id, self._index, -1, tail.text, tail.source, part=tail.part)
        for text in self._calls.texts():
            # The server's calls as Hermes text (the engine's tool_format), read back into tool_calls by serve.
            self._parts.on_token(text, "answer", True, False, -1)
            yield TokenEvent(request_id, self._index, -1, text, "target")
            self._index += 1
        finish_reason = self._finish_reason
        if self._calls.texts() and finish_reason == "tool_calls":
            finish_reason = "stop"
        if not finish_reason:
            if not self._index:
                raise ServerError(f"The server at {self._shown} ended the stream without a reply.")
            raise ConnectionDropped(
                f"The server at {self._shown} ended the stream mid-reply; the reply so far is kept."
            )
        ended = time.monotonic()
        stats = self._stats(ended, finish_reason)
        yield FinishedEvent(
            request_id,
            self._parts.text,
            replace(stats, **self._parts.stats_fields(self._first_at, ended, finish_reason)),
            reasoning=self._parts.reasoning_text,
        )

    def _stats(self, ended: float, finish_reason: str) -> GenerationStats:
        timings = self._timings or ServerTimings()
        first_at = self._first_at
        tokens = timings.predicted_n or self._completion_tokens or self._index
        # The server's own decode speed when it reports one (it excludes the network), else what arrived here.
        tps = timings.predicted_per_second
        if not tps and first_at is not None:
            # Counted from the first token on (the prompt's end is not seen here), like a reply stopped in the window.
            tps = decode_speed(tokens - 1, ended - first_at)
        return GenerationStats(
            tokens=tokens,
            tokens_per_second=tps,
            ttft_s=(first_at - self._started) if first_at is not None else 0.0,
            stop_reason={"stop": "eos", "length": "max_tokens"}.get(finish_reason, finish_reason),
            prompt_tokens=(timings.prompt_n + timings.cache_n) or self._prompt_tokens or 0,
            prompt_cached=timings.cache_n,
            prompt_eval_s=timings.prompt_ms / 1000.0,
            elapsed_s=ended - self._started,
            **self._tally.stats_fields(),
        )
