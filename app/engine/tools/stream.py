"""A streamed reply's text as content pieces and tool calls, in the order a client should see them.

`ToolCallStream.feed` takes each piece of reply text and returns what can go out now; `finish` returns the rest.
A call goes out as records: `CallStart` (its id and name), `ArgumentsPiece`s (its arguments' JSON text), `CallEnd`
(the whole call, as the non-streamed reply gives it). A plain `<tool_call>{"name": ..., "arguments": {...}}` streams:
it starts once its name is whole and names an offered tool, and its arguments go out as the model writes them (the
pieces add up to the whole call's `arguments`, the model's own text of that object). A call the reader then refuses
(its JSON breaks, its closing tag never comes and the text is no call) gets a `CallRefused`, and its text follows as
content, as written. Every other call form (fenced JSON, a bare JSON reply, a list in one block, Qwen3-Coder's XML,
Mistral, Llama 3, Harmony) goes out whole: its three records at once, when it has been read.

Content is never `"\\n\\n"` beside calls: white space is held until text follows it, the reply's leading white
space is dropped, and its trailing white space too when the reply made calls.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Iterable, Iterator, Optional, Sequence, Union

from app.engine.events import FinishedEvent
from app.engine.tools.bodies import ObjectScan, open_call
from app.engine.tools.calls import ToolCall, ToolFormat, new_call_id
from app.engine.tools.parsers import Split, split_reply, tool_names


@dataclass(frozen=True)
class ContentPiece:
    text: str


@dataclass(frozen=True)
class CallStart:
    index: int  # the call's place among this reply's calls, from 0 (a refused call's place is not used again)
    id: str
    name: str


@dataclass(frozen=True)
class ArgumentsPiece:
    index: int
    text: str  # the next characters of the call's arguments (a JSON object's text)


@dataclass(frozen=True)
class CallEnd:
    index: int
    call: ToolCall  # the whole call, its id filled in: its arguments are the pieces sent, joined


@dataclass(frozen=True)
class CallRefused:
    index: int
    id: str
    name: str
    reason: str  # one sentence


@dataclass(frozen=True)
class ReasoningPiece:
    text: str


Piece = Union[ContentPiece, CallStart, ArgumentsPiece, CallEnd, CallRefused, ReasoningPiece]


@dataclass
class _Streaming:
    """The call being sent as it is written."""

    at: int  # where its block begins in the reply's text
    index: int
    id: str
    name: str
    sent: str = ""  # the arguments' text sent so far


class ToolCallStream:
    """One reply's splitter. Any one thread."""

    def __init__(self, family: ToolFormat, tools: Sequence[dict], parallel: bool = True):
        """`parallel` False: the reply's first call is its only one (later ones are dropped, never shown)."""
        self.family = family
        self.parallel = parallel
        self._read = 0  # calls read from the text, kept or dropped
        self.tools = tuple(tools)
        self._names = tool_names(self.tools)
        self._text = ""
        self._content_seen = 0  # characters of the parsed content already handled (sent or held as white space)
        self._sent_any = False
        self._held_space = ""
        self._reasoning_sent = 0
        self._content = ""
        self._next_index = 0
        self._streaming: Optional[_Streaming] = None
        self._scan: tuple[int, ObjectScan] = (-1, ObjectScan())  # the open block (where it is) and its scan so far
        self.calls: list[ToolCall] = []

    def feed(self, text: str) -> list[Piece]:
        self._text += text
        return self._pieces(split_reply(self._text, self.family, self.tools, final=False), final=False)

    def finish(self) -> list[Piece]:
        return self._pieces(split_reply(self._text, self.family, self.tools, final=True), final=True)

    @property
    def content(self) -> str:
        """The whole reply's content, as `finish` leaves it (call after finish)."""
        return self._content

    def _pieces(self, split: Split, final: bool) -> list[Piece]:
        out: list[Piece] = []
        if len(split.reasoning) > self._reasoning_sent:
            out.append(ReasoningPiece(split.reasoning[self._reasoning_sent :]))
            self._reasoning_sent = len(split.reasoning)
        streaming = self._streaming
        if streaming is not None and split.open_at != streaming.at:  # its block is read: a call, or text
            self._streaming = None
            done = split.calls[self._read] if len(split.calls) > self._read else None
            if done is not None and done.name == streaming.name and done.arguments.startswith(streaming.sent):
                self._read += 1
                if done.arguments != streaming.sent:
                    out.append(ArgumentsPiece(streaming.index, done.arguments[len(streaming.sent) :]))
                call = ToolCall(done.name, done.arguments, streaming.id)
                out.append(CallEnd(streaming.index, call))
                self.calls.append(call)
            else:
                why = f"The call to {streaming.name} was not valid JSON of a call, so it stays text."
                out.append(CallRefused(streaming.index, streaming.id, streaming.name, why))
        new = split.content[self._content_seen :]
        self._content_seen = len(split.content)
        for call in split.calls[self._read :]:
            self._read += 1
            if self.calls and not self.parallel:
                continue
            text = self._take(new)
            new = ""
            if text:
                out.append(ContentPiece(text))
            self._held_space = ""  # white space between content and a call is no content
            call = call if call.id else ToolCall(call.name, call.arguments, new_call_id())
            index = self._new_index()
            out += [CallStart(index, call.id, call.name), ArgumentsPiece(index, call.arguments), CallEnd(index, call)]
            self.calls.append(call)
        text = self._take(new)
        if text:
            out.append(ContentPiece(text))
        if not final and split.open_at >= 0:
            out += self._stream(split)
        if final and self._held_space and not self.calls and self._sent_any:
            out.append(ContentPiece(self._held_space))
            self._content += self._held_space
            self._held_space = ""
        return out

    def _stream(self, split: Split) -> list[Piece]:
        """What the call still being written can send now: its start once its name is whole, then its arguments."""
        out: list[Piece] = []
        streaming = self._streaming
        if streaming is None and self.calls and not self.parallel:
            return out
        if self._scan[0] != split.open_at:
            self._scan = (split.open_at, ObjectScan())
        written = open_call(split.open_body, self._scan[1])
        if streaming is None:
            if not written.name or written.name not in self._names:
                return out
            self._held_space = ""
            streaming = self._streaming = _Streaming(split.open_at, self._new_index(), new_call_id(), written.name)
            out.append(CallStart(streaming.index, streaming.id, streaming.name))
        if written.arguments.startswith(streaming.sent) and len(written.arguments) > len(streaming.sent):
            out.append(ArgumentsPiece(streaming.index, written.arguments[len(streaming.sent) :]))
            streaming.sent = written.arguments
        return out

    def _new_index(self) -> int:
        self._next_index += 1
        return self._next_index - 1

    def _take(self, new: str) -> str:
        """`new` content with white space held back until text follows it."""
        text = self._held_space + new
        if not self._sent_any:
            text = text.lstrip()
        body = text.rstrip()
        self._held_space = text[len(body) :]
        if body:
            self._sent_any = True
            self._content += body
        return body


def split_whole(text: str, family: ToolFormat, tools: Sequence[dict]) -> tuple[str, list[ToolCall]]:
    """A finished reply's content and calls (ids filled in), by the same rules as streaming."""
    stream = ToolCallStream(family, tools)
    stream.feed(text)
    stream.finish()
    return stream.content, stream.calls


def with_tool_calls(events: Iterable[object], family: ToolFormat, tools_json: str) -> Iterator[object]:
    """A reply's events with its FinishedEvent's calls read out of its text (FinishedEvent.tool_calls), for a front
    end that runs them; every other event as it came."""
    tools = json.loads(tools_json) if tools_json else []
    for event in events:
        if isinstance(event, FinishedEvent) and tools:
            content, calls = split_whole(event.calls_text, family, tools)
            if calls:
                event = dataclasses.replace(event, text=content, tool_calls=tuple(calls))
        yield event
