"""The window's side of the tool loop (app.replies.tool_loop): a reply's calls asked about in the transcript, run
on the tool servers' thread, their results stored and sent back to the model, until it answers.

Nothing runs unseen: a call runs only once the person allowed it (once, or always for this tool in this chat, which
the chat's settings keep, bound to the tool itself: ToolInfo.grant_key); Deny sends the model a refusal. Each call's
tool is resolved once, when the reply's calls arrive; the prompt shows that tool, and exactly that tool runs. Where
it changed or went away before the person answered, the call is asked about again (as the tool of that name now
is), or the model is told there is none. Calls run one at a time, in the order the reply made
them. Every change to a call is stored with its reply at once and drawn from the store's record, so a restart shows
what happened. Stop ends the loop at once, a running call included; a hung server's call times out on the host
with a sentence. GUI thread only; a call's result arrives from the host's thread through a signal.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
from typing import Optional, Sequence

from PySide6.QtCore import QObject, Signal

from app.engine.tools.calls import ToolCall
from app.mcp.records import ToolInfo, ToolResult, find_tool
from app.replies.tool_loop import (
    ToolRun,
    answered,
    arguments_object,
    limit_sentence,
    pending_record,
    stopped,
    denied,
    unknown_tool,
)
from app.store import ChatStore, StoreError
from app.store.tool_calls import CallAnswer, ToolCallRecord
from app.ui.tools.call_blocks import CallBlocks
from app.ui.tools.servers import ToolServers


class ToolTurns(QObject):
    """Runs the tool loop of the open chat. `conversation` is the chat's Conversation (app.ui.chat)."""

    sig_busy_changed = Signal(bool)
    """Calls are being asked about or run (True), or no longer (False): the composer shows Stop meanwhile."""
    sig_error = Signal(str)
    """Something the person should read (a call could not be stored)."""
    _sig_call_done = Signal(object, object)
    """(future, ToolResult), from the host's thread: a call ended."""

    def __init__(self, conversation, servers: ToolServers, blocks: CallBlocks, parent: Optional[QObject] = None):
        super().__init__(parent)
        self.conversation = conversation
        self.store: ChatStore = conversation.store
        self.servers = servers
        self.blocks = blocks
        self._run: Optional[ToolRun] = None
        self._run_key: Optional[tuple[int, int]] = None  # (chat id, the question's message id) the run answers
        self._message_id: Optional[int] = None  # the reply whose calls are being handled
        self._calls: list[ToolCallRecord] = []
        self._tools: list[Optional[ToolInfo]] = []  # each call's tool, as resolved when it was asked about
        self._queue: list[int] = []  # allowed calls waiting to run, by index
        self._future: Optional[concurrent.futures.Future] = None
        self._without_tools = False
        self._busy = False
        conversation.tool_offer = self.offer
        conversation.sig_tool_calls.connect(self._on_calls)
        conversation.sig_stopping.connect(self.stop)
        blocks.sig_answer.connect(self.answer)
        self._sig_call_done.connect(self._on_call_done)

    # ----- what the model is offered

    def offer(self, chat_id: Optional[int]) -> str:
        """The tools the chat offers the model now ("" for none, or once after a reply repeated its calls)."""
        if self._without_tools:
            self._without_tools = False
            return ""
        chat = self.store.get_chat(chat_id) if chat_id is not None else None
        return self.servers.tools_json(chat.settings) if chat is not None else ""

    def is_busy(self) -> bool:
        return self._busy

    # ----- a reply's calls

    def _on_calls(self, message_id: int, calls: Sequence[ToolCall]) -> None:
        message = self.store.get_message(message_id)
        if message is None:
            return
        run = self._run_for(message.chat_id, message_id)
        step = run.next_step(calls)
        chat = self.store.get_chat(message.chat_id)
        tools = self.servers.chat_tools(chat.settings) if chat is not None else ()
        self._tools = [find_tool(tools, call.name) for call in calls]
        records = [pending_record(call, tool) for call, tool in zip(calls, self._tools)]
        self._message_id, self._calls, self._queue = message_id, records, []
        if step == "limit":
            self._calls = [stopped(record) for record in records]
            self._save()
            self.conversation.view.add_notice(limit_sentence(run.max_steps))
            self._end()
            return
        if step == "repeated":
            # The model asked again for what it already has: nothing runs again, the reply is left out of what the
            # model reads (chat_prompt) and the next reply is asked without tools, to answer from the results it
            # had, as `generate --mcp` does. A note sent as the result instead ("already made...") is what a small
            # model then writes back as its answer; with the reply kept in, it writes the call again as text.
            self._calls = [answered(record, "repeated", ToolResult("")) for record in records]
            self._without_tools = True
            self._save()
            self._continue()
            return
        self._set_busy(True)
        always = set(chat.settings.tools_always) if chat is not None else set()
        for index, (record, tool) in enumerate(zip(records, self._tools)):
            if tool is None:  # no tool of that name is offered: the model is told, nothing runs
                self._calls[index] = unknown_tool(record)
            elif tool.grant_key in always:
                self._calls[index] = dataclasses.replace(record, answer="always")
                self._queue.append(index)
            else:
                self.blocks.asking.add((message_id, index))
        self._save()
        self._next()

    def answer(self, message_id: int, index: int, answer: str) -> None:
        """The person's answer to the prompt of call `index` of reply `message_id`."""
        key = (message_id, index)
        if message_id != self._message_id or key not in self.blocks.asking or index >= len(self._calls):
            return
        record, tool = self._calls[index], self._tools[index]
        if answer != "denied" and tool is not None and self.servers.current(tool) is None:
            self._ask_again(index)
            return
        self.blocks.asking.discard(key)
        if answer == "denied" or tool is None:
            self._calls[index] = denied(record)
        else:
            self._calls[index] = dataclasses.replace(record, answer=_answer(answer))
            self._queue.append(index)
            if answer == "always":
                self._always_allow(tool.grant_key)
        self._save()
        self._next()

    def _ask_again(self, index: int) -> None:
        """The tool the person was asked about changed or went away: the call is asked about again as the tool of
        its name now is, or, with none, the model is told so. Nothing runs on an answer about another tool."""
        record = self._calls[index]
        chat = self.store.get_chat(self.conversation.chat_id) if self.conversation.chat_id is not None else None
        tool = find_tool(self.servers.chat_tools(chat.settings), record.name) if chat is not None else None
        self._tools[index] = tool
        again = pending_record(ToolCall(record.name, record.arguments, record.id), tool)
        if tool is None:
            self.blocks.asking.discard((self._message_id or 0, index))
            self._calls[index] = unknown_tool(again)
        else:
            self._calls[index] = again
        self._save()
        self._next()

    def stop(self) -> None:
        """Stop: the running call is cancelled, calls not yet run are marked stopped, and no reply follows."""
        if self._message_id is None:
            return
        future, self._future = self._future, None
        if future is not None:
            future.cancel()
        self._calls = [stopped(c) if not c.result else c for c in self._calls]
        self.blocks.asking.clear()
        self.blocks.running = None
        self._queue = []
        self._save()
        self._end()

    # ----- running

    def _next(self) -> None:
        """Run the next allowed call; when every call has its result, ask the model again."""
        if self._future is not None or self._message_id is None:
            return
        if self._queue:
            index = self._queue.pop(0)
            record = self._calls[index]
            self.blocks.running = (self._message_id, index)
            self._refresh()
            tool = self._tools[index]
            assert tool is not None  # a call without a tool is answered at once, never queued
            future = self.servers.call_tool(tool, arguments_object(record.arguments))
            self._future = future
            future.add_done_callback(lambda done: self._sig_call_done.emit(done, _result_of(done)))
            return
        if all(call.result for call in self._calls):
            self._continue()

    def _on_call_done(self, future: concurrent.futures.Future, result: Optional[ToolResult]) -> None:
        if future is not self._future or self.blocks.running is None or result is None:
            return  # stopped meanwhile
        self._future = None
        index = self.blocks.running[1]
        self.blocks.running = None
        record = self._calls[index]
        self._calls[index] = answered(record, record.answer or "once", result)
        self._save()
        self._next()

    def _continue(self) -> None:
        """Every call has its result: the model is asked again, with the results in its chat."""
        spec = self.conversation.last_reply_spec
        if self._run is not None:
            self._run.note(self._calls)
        self._message_id = None
        self._set_busy(False)
        if spec is not None and self.conversation.chat_id is not None:
            self.conversation.start_reply(spec)

    def _end(self) -> None:
        self._message_id = None
        self._run = None
        self._run_key = None
        self._set_busy(False)

    # ----- bookkeeping

    def _run_for(self, chat_id: int, reply_id: int) -> ToolRun:
        """The run this reply belongs to: the one answering the same question, else a new one."""
        question = max(
            (mid for mid, role, _ in self.store.message_texts(chat_id) if role == "user" and mid < reply_id), default=0
        )
        if self._run is None or self._run_key != (chat_id, question):
            self._run, self._run_key = ToolRun(), (chat_id, question)
        return self._run

    def _always_allow(self, grant_key: str) -> None:
        chat_id = self.conversation.chat_id
        chat = self.store.get_chat(chat_id) if chat_id is not None else None
        if chat is None or grant_key in chat.settings.tools_always:
            return
        settings = dataclasses.replace(chat.settings, tools_always=[*chat.settings.tools_always, grant_key])
        try:
            self.store.update_settings(chat.id, settings)
        except StoreError as exc:
            self.sig_error.emit(str(exc))

    def _save(self) -> None:
        if self._message_id is None:
            return
        try:
            self.store.set_tool_calls(self._message_id, self._calls)
        except StoreError as exc:
            self.sig_error.emit(f"The tool calls could not be saved: {exc}")
        self._refresh()

    def _refresh(self) -> None:
        if self._message_id is not None:
            self.conversation.refresh_reply(self._message_id)

    def _set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.sig_busy_changed.emit(busy)


def _answer(answer: str) -> CallAnswer:
    return "always" if answer == "always" else "once"


def _result_of(future: concurrent.futures.Future) -> Optional[ToolResult]:
    """The call's result (None when it was cancelled: Stop already said what happened)."""
    if future.cancelled():
        return None
    try:
        return future.result()
    except Exception as exc:  # the host never raises into a Future, but a result must still come
        return ToolResult(f"The tool call failed: {exc}", is_error=True)
