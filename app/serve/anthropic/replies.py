"""One job's records as Anthropic's Messages shapes: the stream's events in Anthropic's order, and the whole message.

The records go through app.serve.replies.ReplyShaper, which holds back stop strings and reads the reasoning and the
tool calls out of the reply; its OpenAI chunks are then framed as content blocks here: `thinking` (closed by a
`signature_delta`, which Claude Code needs before it keeps a thinking block), `text`, and `tool_use` (opened with
an empty input once the call's name is known, then its input as `input_json_delta` pieces while the model writes
it, closed when the call is whole; a call sent whole has one piece). The signature is the thinking text's hash: nothing checks it when it is sent back.

Usage is Anthropic's: `input_tokens` counts the prompt tokens that were read (the message_start event, sent before
the engine knows what its cache holds, counts them all), `cache_read_input_tokens` those whose KV cache was kept.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any, Optional

from app.engine.events import FinishedEvent, TokenEvent
from app.serve.replies import ERROR_TYPES as OPENAI_ERROR_TYPES
from app.serve.replies import ReplyShaper

# The engine's finish as Anthropic's stop_reason (OpenAI's finish_reason, as ReplyShaper decides it, read here).
STOP_REASONS = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}
# Anthropic's error types by HTTP status where they differ from OpenAI's (anything unnamed is an "api_error").
ERROR_TYPES = {**OPENAI_ERROR_TYPES, 413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error"}

Event = tuple[str, dict]


def error_body(status: int, message: str) -> dict:
    """Anthropic's error shape, with one sentence."""
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}}


def signature(thinking: str) -> str:
    return hashlib.sha256(b"specchat-thinking\0" + thinking.encode("utf-8")).hexdigest()


@dataclass
class MessageShaper:
    """Turns one request's records into Anthropic's events or whole message. One per request; any one thread."""

    shaper: ReplyShaper
    id: str = field(default_factory=lambda: f"msg_{uuid.uuid4().hex[:24]}")
    _block: str = ""  # the open content block's type ("": none)
    _index: int = -1
    _thinking: list[str] = field(default_factory=list)

    @property
    def stopped_by_string(self) -> bool:
        return self.shaper.stopped_by_string

    def _message(self, content: list[dict], stop_reason: Optional[str], stop_sequence: Optional[str]) -> dict:
        return {
            "id": self.id,
            "type": "message",
            "role": "assistant",
            "model": self.shaper.model or self.shaper.request.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": stop_sequence,
        }

    def start(self) -> Event:
        """message_start: its usage counts every prompt token as read (Claude Code fails without `input_tokens`)."""
        message = self._message([], None, None)
        message["usage"] = {
            "input_tokens": self.shaper.prompt_tokens,
            "output_tokens": 0,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        }
        return "message_start", {"type": "message_start", "message": message}

    def on_token(self, event: TokenEvent) -> list[Event]:
        """The events for a token of a streamed reply (none while text is held back)."""
        return self._events(self.shaper.chunks(self.shaper.on_token(event)))

    def absorb(self, event: TokenEvent) -> list[Event]:
        """A token of a whole reply: kept for `whole`, no events."""
        self.shaper.on_token(event)
        return []

    def finish(self, finished: Optional[FinishedEvent]) -> list[Event]:
        """What the held text and the open block still owe, then message_delta and message_stop."""
        events = self._events(self.shaper.chunks(self.shaper.flush(), last=True))
        events += self._close()
        stop_reason, stop_sequence = self._stop(finished)
        delta = {"stop_reason": stop_reason, "stop_sequence": stop_sequence}
        events.append(("message_delta", {"type": "message_delta", "delta": delta, "usage": self._usage(finished)}))
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def _events(self, chunks: list[dict]) -> list[Event]:
        events: list[Event] = []
        for chunk in chunks:
            delta = chunk["choices"][0]["delta"]
            if delta.get("reasoning_content"):
                events += self._open("thinking", {"type": "thinking", "thinking": ""})
                self._thinking.append(delta["reasoning_content"])
                events.append(self._delta({"type": "thinking_delta", "thinking": delta["reasoning_content"]}))
            if delta.get("content"):
                events += self._open("text", {"type": "text", "text": ""})
                events.append(self._delta({"type": "text_delta", "text": delta["content"]}))
            for call in delta.get("tool_calls", ()):
                if "id" in call:  # a call's head: a block of its own
                    events += self._close()
                    head = {"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": {}}
                    events += self._open("tool_use", head)
                elif call["function"]["arguments"]:
                    partial = {"type": "input_json_delta", "partial_json": call["function"]["arguments"]}
                    events.append(self._delta(partial))
            if (chunk.get("specchat") or {}).get("call") and self._block == "tool_use":
                events += self._close()  # the call is whole (or refused, its text following as a text block)
        return events

    def _open(self, kind: str, block: dict) -> list[Event]:
        if self._block == kind and kind != "tool_use":
            return []
        events = self._close()
        self._block, self._index = kind, self._index + 1
        events.append(
            ("content_block_start", {"type": "content_block_start", "index": self._index, "content_block": block})
        )
        return events

    def _close(self) -> list[Event]:
        if not self._block:
            return []
        events = []
        if self._block == "thinking":
            events.append(self._delta({"type": "signature_delta", "signature": signature("".join(self._thinking))}))
            self._thinking = []
        events.append(("content_block_stop", {"type": "content_block_stop", "index": self._index}))
        self._block = ""
        return events

    def _delta(self, delta: dict) -> Event:
        return "content_block_delta", {"type": "content_block_delta", "index": self._index, "delta": delta}

    def _stop(self, finished: Optional[FinishedEvent]) -> tuple[str, Optional[str]]:
        if self.shaper.stopped_by_string:
            return "stop_sequence", self.shaper.stop_string
        return STOP_REASONS.get(self.shaper.finish_reason(finished), "end_turn"), None

    def _usage(self, finished: Optional[FinishedEvent]) -> dict[str, int]:
        cached = finished.stats.prompt_cached if finished is not None else 0
        return {
            "input_tokens": max(0, self.shaper.prompt_tokens - cached),
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": cached,
            "output_tokens": finished.stats.tokens if finished is not None else 0,
        }

    def whole(self, finished: Optional[FinishedEvent]) -> dict:
        """The non-streamed message: thinking, text and tool_use blocks, stop_reason and usage."""
        self.shaper.flush()
        reply = self.shaper.whole_reply(finished)["choices"][0]["message"]
        content: list[dict[str, Any]] = []
        if reply.get("reasoning_content"):
            thinking = reply["reasoning_content"]
            content.append({"type": "thinking", "thinking": thinking, "signature": signature(thinking)})
        if reply.get("content"):
            content.append({"type": "text", "text": reply["content"]})
        for call in reply.get("tool_calls", ()):
            arguments = json.loads(call["function"]["arguments"] or "{}")
            content.append({"type": "tool_use", "id": call["id"], "name": call["function"]["name"], "input": arguments})
        message = self._message(content, *self._stop(finished))
        message["usage"] = self._usage(finished)
        return message
