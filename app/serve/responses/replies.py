"""One job's records as the Responses API's streamed events and its whole response object.

The chat API's ReplyShaper reads the records (stop strings, tool calls in the model's format, thinking apart from
the answer) and hands out chat deltas; here those deltas become Responses' output items, each opened
(`response.output_item.added`), filled (text, reasoning or arguments deltas) and closed (`...done`) in order, every
event numbered by `sequence_number`. A reply always ends with one of `response.completed`, `response.incomplete`
(the token limit came first) or `response.failed`: a client such as Codex retries a stream that ends without one.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

import jiter

from app.engine.events import FinishedEvent
from app.serve.replies import ReplyShaper
from app.serve.responses.requests import CUSTOM_INPUT, ResponsesRequest

# The chat API's finish reasons that leave a response incomplete, and why, in Responses' words.
INCOMPLETE = {"length": "max_output_tokens"}


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:24]}"


@dataclass
class ResponseEvents:
    """Turns the ReplyShaper's chat deltas into Responses events, and keeps the response object they build. One
    per request; any one thread."""

    request: ResponsesRequest
    shaper: ReplyShaper
    id: str = field(default_factory=lambda: _new_id("resp"))
    created_at: int = field(default_factory=lambda: int(time.time()))
    output: list[dict] = field(default_factory=list)  # the items, the last one open while `open_kind` is set
    open_kind: str = ""  # "message", "reasoning" or "call" while that item streams
    sequence: int = 0
    _arguments: str = ""  # the open call's arguments text so far

    def _event(self, kind: str, **fields) -> dict:
        event = {"type": kind, "sequence_number": self.sequence, **fields}
        self.sequence += 1
        return event

    def response(self, status: str, finished: Optional[FinishedEvent] = None, error: Optional[dict] = None) -> dict:
        """The response object as it stands: its items, its status, and (finished) its usage."""
        reason = self.shaper.finish_reason(finished) if status == "incomplete" else ""
        body = {
            "id": self.id,
            "object": "response",
            "created_at": self.created_at,
            "status": status,
            "model": self.shaper.model or self.request.chat.model,
            "output": [dict(item) for item in self.output],
            "error": error,
            "incomplete_details": {"reason": INCOMPLETE.get(reason, reason)} if reason else None,
            "previous_response_id": None,
            "store": False,
            "truncation": "disabled",
            "usage": self._usage(finished) if finished is not None else None,
            **self.request.echo,
        }
        text = "".join(p["text"] for i in self.output if i["type"] == "message" for p in i["content"])
        body["output_text"] = text
        return body

    def _usage(self, finished: FinishedEvent) -> dict:
        stats = finished.stats
        prompt = self.shaper.prompt_tokens or stats.prompt_tokens
        return {
            "input_tokens": prompt,
            # cache_write_tokens is for caches a client asks for and pays to fill; this server keeps its own.
            "input_tokens_details": {"cached_tokens": stats.prompt_cached, "cache_write_tokens": 0},
            "output_tokens": stats.tokens,
            "output_tokens_details": {"reasoning_tokens": stats.reasoning_tokens},
            "total_tokens": prompt + stats.tokens,
        }

    # -- events -------------------------------------------------------------------------------------------------

    def start(self) -> list[dict]:
        """The first events: the response exists and is being written."""
        response = self.response("in_progress")
        return [self._event("response.created", response=response), self.alive()]

    def alive(self) -> dict:
        """Said while nothing else is (a long prompt is being read), so that the client knows the server is there."""
        return self._event("response.in_progress", response=self.response("in_progress"))

    def on_chunks(self, chunks: list[dict]) -> list[dict]:
        """The events for the ReplyShaper's chat chunks."""
        events: list[dict] = []
        for chunk in chunks:
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("reasoning_content"):
                    events += self._text("reasoning", delta["reasoning_content"])
                if delta.get("content"):
                    events += self._text("message", delta["content"])
                for call in delta.get("tool_calls") or []:
                    events += self._call(call)
            note = (chunk.get("specchat") or {}).get("call")
            if note and self.open_kind == "call":
                events += self._close_call(refused=note["state"] == "refused")
        return events

    def _text(self, kind: str, text: str) -> list[dict]:
        events = [] if self.open_kind == kind else self._close() + self._open(kind)
        index = len(self.output) - 1
        item = self.output[-1]
        item["content"][0]["text"] += text
        name = "response.output_text.delta" if kind == "message" else "response.reasoning_text.delta"
        extra: dict = {"logprobs": []} if kind == "message" else {}
        events.append(self._event(name, item_id=item["id"], output_index=index, content_index=0, delta=text, **extra))
        return events

    def _open(self, kind: str) -> list[dict]:
        part_type = "output_text" if kind == "message" else "reasoning_text"
        item: dict
        if kind == "message":
            item = {"id": _new_id("msg"), "type": "message", "role": "assistant", "status": "in_progress"}
            item["content"] = []
        else:
            item = {"id": _new_id("rs"), "type": "reasoning", "summary": [], "content": []}
        self.output.append(item)
        self.open_kind = kind
        index = len(self.output) - 1
        part: dict = {"type": part_type, "text": ""}
        if kind == "message":
            part["annotations"] = []
        events = [self._event("response.output_item.added", output_index=index, item=dict(item, content=[]))]
        item["content"].append(part)
        events.append(
            self._event(
                "response.content_part.added", item_id=item["id"], output_index=index, content_index=0, part=dict(part)
            )
        )
        return events

    def _close(self) -> list[dict]:
        """The events that close the open item (text, reasoning or a call), if one is open."""
        if not self.open_kind:
            return []
        if self.open_kind == "call":
            return self._close_call(refused=False)
        item = self.output[-1]
        index = len(self.output) - 1
        part = item["content"][0]
        done = "response.output_text.done" if self.open_kind == "message" else "response.reasoning_text.done"
        where = {"item_id": item["id"], "output_index": index, "content_index": 0}
        extra: dict = {"logprobs": []} if self.open_kind == "message" else {}
        if self.open_kind == "message":
            item["status"] = "completed"
        self.open_kind = ""
        return [
            self._event(done, text=part["text"], **where, **extra),
            self._event("response.content_part.done", part=dict(part), **where),
            self._event("response.output_item.done", output_index=index, item=dict(item)),
        ]

    def _call(self, call: dict) -> list[dict]:
        """A call's events: its head opens the item, each piece of its arguments is a delta (a custom tool's input
        text, decoded as far as it is written), and the chunk that ends it (`specchat.call`) closes it."""
        function = call.get("function") or {}
        if call.get("id"):
            events = self._close()
            name = function.get("name", "")
            if name in self.request.custom:
                item = {"id": _new_id("ctc"), "type": "custom_tool_call", "status": "in_progress"}
                item.update(call_id=call["id"], name=name, input="")
            else:
                item = {"id": _new_id("fc"), "type": "function_call", "status": "in_progress"}
                item.update(call_id=call["id"], name=name, arguments="")
                if name in self.request.namespaces:
                    item["namespace"] = self.request.namespaces[name]
            self.output.append(item)
            self.open_kind, self._arguments = "call", ""
            events.append(self._event("response.output_item.added", output_index=len(self.output) - 1, item=dict(item)))
            return events
        item = self.output[-1]
        where = {"item_id": item["id"], "output_index": len(self.output) - 1}
        self._arguments += function.get("arguments", "")
        if item["type"] == "function_call":
            item["arguments"] = self._arguments
            delta = function.get("arguments", "")
            return [self._event("response.function_call_arguments.delta", **where, delta=delta)] if delta else []
        text = _custom_input(self._arguments, partial=True)
        if not text.startswith(item["input"]) or len(text) == len(item["input"]):
            return []
        delta, item["input"] = text[len(item["input"]) :], text
        return [self._event("response.custom_tool_call_input.delta", **where, delta=delta)]

    def _close_call(self, refused: bool) -> list[dict]:
        """The events that close the open call's item: whole (its arguments, or a custom tool's input, complete),
        or refused (the model's text was no call: the item is left incomplete, the text follows as a message)."""
        item = self.output[-1]
        index = len(self.output) - 1
        where = {"item_id": item["id"], "output_index": index}
        self.open_kind = ""
        item["status"] = "incomplete" if refused else "completed"
        events = []
        if item["type"] == "custom_tool_call":
            text = _custom_input(self._arguments)
            if not refused and text.startswith(item["input"]) and len(text) > len(item["input"]):
                delta = text[len(item["input"]) :]
                events.append(self._event("response.custom_tool_call_input.delta", **where, delta=delta))
            item["input"] = text if not refused else item["input"]
            events.append(self._event("response.custom_tool_call_input.done", **where, input=item["input"]))
        else:
            events.append(self._event("response.function_call_arguments.done", **where, arguments=item["arguments"]))
        events.append(self._event("response.output_item.done", output_index=index, item=dict(item)))
        return events

    def finish(self, finished: Optional[FinishedEvent]) -> list[dict]:
        """The last events: open items closed, then response.completed (or .incomplete at the token limit)."""
        events = self._close()
        status = "incomplete" if self.shaper.finish_reason(finished) in INCOMPLETE else "completed"
        events.append(self._event(f"response.{status}", response=self.response(status, finished)))
        return events

    def failed(self, message: str, code: str = "server_error") -> dict:
        """The event that ends a reply the server could not write (code context_length_exceeded: too long)."""
        error = {"code": code, "message": message}
        return self._event("response.failed", response=self.response("failed", error=error))


def _custom_input(arguments: str, partial: bool = False) -> str:
    """A custom tool's input: the text of its one parameter (the arguments as they are, if the model wrote no
    such object). With `partial`, of arguments still being written: the parameter's text so far (jiter reads the
    unclosed string), or "" while there is none."""
    if partial:
        try:
            value = jiter.from_json(arguments.encode(), partial_mode="trailing-strings")
        except ValueError:
            return ""
        text = value.get(CUSTOM_INPUT) if isinstance(value, dict) else None
        return text if isinstance(text, str) else ""
    try:
        value = json.loads(arguments)
    except ValueError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get(CUSTOM_INPUT), str):
        return value[CUSTOM_INPUT]
    return arguments
