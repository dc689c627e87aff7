"""A streamed reply's text as content pieces and whole tool calls, in the order a client should see them.

`ToolCallStream.feed` takes each piece of reply text and returns what can go out now; `finish` returns the rest.
A call goes out once it is complete (its name, id and arguments together: OpenAI's framing allows the arguments in
one fragment). Content is never `"\\n\\n"` beside calls: white space is held until text follows it, the reply's
leading white space is dropped, and its trailing white space too when the reply made calls.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import Iterable, Iterator, Sequence, Union

from app.engine.events import FinishedEvent
from app.engine.tools.calls import ToolCall, ToolFormat, new_call_id
from app.engine.tools.parsers import Split, split_reply


@dataclass(frozen=True)
class ContentPiece:
    text: str


@dataclass(frozen=True)
class CallPiece:
    index: int  # the call's place among this reply's calls, from 0
    call: ToolCall  # with its id filled in


@dataclass(frozen=True)
class ReasoningPiece:
    text: str


Piece = Union[ContentPiece, CallPiece, ReasoningPiece]


class ToolCallStream:
    """One reply's splitter. Any one thread."""

    def __init__(self, family: ToolFormat, tools: Sequence[dict], parallel: bool = True):
        """`parallel` False: the reply's first call is its only one (later ones are dropped, never shown)."""
        self.family = family
        self.parallel = parallel
        self._read = 0  # calls read from the text, kept or dropped
        self.tools = tuple(tools)
        self._text = ""
        self._content_seen = 0  # characters of the parsed content already handled (sent or held as white space)
        self._sent_any = False
        self._held_space = ""
        self._reasoning_sent = 0
        self._content = ""
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
            out.append(CallPiece(len(self.calls), call))
            self.calls.append(call)
        text = self._take(new)
        if text:
            out.append(ContentPiece(text))
        if final and self._held_space and not self.calls and self._sent_any:
            out.append(ContentPiece(self._held_space))
            self._content += self._held_space
            self._held_space = ""
        return out

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
