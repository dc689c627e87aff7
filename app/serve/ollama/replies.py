"""One job's records as Ollama's replies: newline-delimited JSON lines while streaming, or one whole object.

The records go through the OpenAI API's ReplyShaper, which holds back text that may begin a stop string, tells
the thinking from the answer and reads tool calls out of the answer; its chunks are then written in Ollama's
words: `message.content` and `message.thinking` (`response` and `thinking` for /api/generate), and each call
whole, its `arguments` an object rather than OpenAI's JSON text. The last line (or the whole reply) carries
`done`, `done_reason` and Ollama's counters, durations in nanoseconds.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Literal, Optional

from app.engine.events import FinishedEvent, GenerationStats, RoundEvent, TokenEvent
from app.serve.completions.replies import CompletionShaper
from app.serve.completions.requests import ApiRequest, CompletionRequest
from app.serve.jobs import JobStarted
from app.serve.ollama.models import timestamp
from app.serve.replies import HeldToken, ReplyShaper

Endpoint = Literal["chat", "generate"]
# OpenAI's finish reasons (the shaper's) as Ollama's done_reason: a call ends the turn as the model's stop does.
DONE_REASONS = {"stop": "stop", "tool_calls": "stop", "length": "length"}
NS = 1_000_000_000


def ndjson(line: dict) -> bytes:
    return (json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


@dataclass
class OllamaReply:
    """One request's reply in Ollama's shapes. One per request; any one thread."""

    endpoint: Endpoint
    model: str  # the name the client asked for, which every line repeats
    shaper: ReplyShaper
    arrived_ns: int  # time.monotonic_ns() when the request came
    _pending: dict[int, dict] = field(default_factory=dict)  # a streamed call (head, arguments so far) by index
    _sent_calls: list[str] = field(default_factory=list)  # the ids of the calls sent, in order

    @classmethod
    def start(
        cls, endpoint: Endpoint, model: str, request: ApiRequest, started: JobStarted, arrived_ns: int
    ) -> "OllamaReply":
        shaper_type = CompletionShaper if isinstance(request, CompletionRequest) else ReplyShaper
        shaper = shaper_type(
            request, model=started.model, prompt_tokens=started.prompt_tokens, tool_format=started.tool_format
        )
        return cls(endpoint, model, shaper, arrived_ns)

    def take(self, record: object) -> list[HeldToken]:
        """A round or token record in; the tokens that may go out now."""
        if isinstance(record, RoundEvent):
            self.shaper.on_round(record)
        elif isinstance(record, TokenEvent) and not self.shaper.stopped_by_string:  # else in flight before the stop
            return self.shaper.on_token(record)
        return []

    def lines(self, tokens: list[HeldToken], last: bool = False) -> list[dict]:
        """The streamed lines for released `tokens` (with `last`, also what the shaper still holds)."""
        out = []
        for chunk in self.shaper.chunks(tokens, last=last):
            choice = chunk["choices"][0]
            if "text" in choice:  # a text completion's
                parts = {"content": choice["text"]}
            else:
                parts = self._parts(choice["delta"], (chunk.get("specchat") or {}).get("call"))
            if any(parts.values()):
                out.append(self._line(parts))
        return out

    def last_line(self, finished: Optional[FinishedEvent]) -> dict:
        return {**self._line({"content": ""}, done=True), **self._totals(finished)}

    def whole(self, finished: Optional[FinishedEvent]) -> dict:
        """The reply as one object (`stream`: false)."""
        reply = self.shaper.whole_reply(finished)
        choice = reply["choices"][0]
        if "text" in choice:
            parts = {"content": choice["text"]}
        else:
            message = choice["message"]
            parts = {"content": message.get("content") or "", "thinking": message.get("reasoning_content") or ""}
            parts["tool_calls"] = [_call(c, k) for k, c in enumerate(message.get("tool_calls") or [])]
        return {**self._line(parts, done=True), **self._totals(finished)}

    def _parts(self, delta: dict, ended: Optional[dict]) -> dict:
        """A line's parts for a chat `delta`. Ollama's clients expect whole calls: a call's head and its arguments'
        pieces are kept until the chunk that ends it (`ended`, SpecChat's `specchat.call`), then sent as one; a
        refused call is dropped (its text follows as content)."""
        parts = {"content": delta.get("content") or "", "thinking": delta.get("reasoning_content") or ""}
        for frame in delta.get("tool_calls") or []:
            if "id" in frame:  # a call's head: its arguments come in the next frames
                self._pending[frame["index"]] = frame
            else:
                head = self._pending[frame["index"]]
                arguments = head["function"]["arguments"] + frame["function"]["arguments"]
                head["function"] = {**head["function"], "arguments": arguments}
        calls = []
        if ended is not None and ended["index"] in self._pending:
            whole = self._pending.pop(ended["index"])
            if ended["state"] == "done":
                calls.append(_call(whole, len(self._sent_calls)))
                self._sent_calls.append(whole["id"])
        parts["tool_calls"] = calls
        return parts

    def _line(self, parts: dict, done: bool = False) -> dict:
        """A line (or whole reply) holding `parts`: content, thinking, tool_calls, whichever are there."""
        line: dict = {"model": self.model, "created_at": timestamp()}
        thinking = parts.get("thinking")
        if self.endpoint == "chat":
            message: dict = {"role": "assistant", "content": parts.get("content", "")}
            if thinking:
                message["thinking"] = thinking
            if parts.get("tool_calls"):
                message["tool_calls"] = parts["tool_calls"]
            line["message"] = message
        else:
            line["response"] = parts.get("content", "")
            if thinking:
                line["thinking"] = thinking
        line["done"] = done
        return line

    def _totals(self, finished: Optional[FinishedEvent]) -> dict:
        """The last line's reason and counters. The model stays loaded, so loading took no time."""
        stats = finished.stats if finished is not None else GenerationStats()
        reason = self.shaper.finish_reason(finished)
        eval_s = stats.tokens / stats.tokens_per_second if stats.tokens_per_second > 0 else 0.0
        return {
            "done_reason": DONE_REASONS.get(reason, "stop"),
            "total_duration": time.monotonic_ns() - self.arrived_ns,
            "load_duration": 0,
            "prompt_eval_count": stats.prompt_tokens or self.shaper.prompt_tokens,
            "prompt_eval_duration": int(stats.prompt_eval_s * NS),
            "eval_count": stats.tokens,
            "eval_duration": int(eval_s * NS),
        }


def _call(call: dict, index: int) -> dict:
    """An OpenAI call as Ollama's: `arguments` the object its JSON text holds."""
    function = call["function"]
    arguments = json.loads(function["arguments"] or "{}")
    return {"id": call["id"], "function": {"index": index, "name": function["name"], "arguments": arguments}}
