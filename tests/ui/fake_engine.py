"""A stand-in for SpecEngine with the same interface, for UI tests that need exact control over timing and events.

It yields a scripted reply: with speculation on, rounds of DRAFT_RUN draft tokens the "target" accepted, then one
target token; with it off, one round per target token (drafter "none"). Like the real engine, each round's
RoundEvent comes before its tokens and carries what was proposed (the refused tokens included), the target's own
token and a time; each TokenEvent carries its drafter and round. A delay per token lets tests stop a reply midway.
Like the real engine it runs in the engine process, so a test steers it through `FakeEngineControl`: a small JSON
file of knobs the fake reads at every request, and a log of what it was asked, one JSON line per load or request.

Knobs for provenance: `refuse_tail` (int) adds that many refused tokens to every proposal, taken in turn from the
words of `refused_text`, so the target keeps DRAFT_RUN and writes its own token instead; `drafter` forces who drafts
("model", "ngram", or "alternate": model and n-gram by turns; "" picks as the real engine does: the draft model when
one is loaded and the chat does not ask for n-gram); `round_time_s` is the time each round reports.
`bus_error_on_change` makes the engine die by SIGBUS, as llama.cpp's mmap does, when the target file's size changes
while it writes a reply.
`reasoning` is a thinking model's reasoning, streamed before the reply as TokenEvents of part "reasoning" (the
markers already taken out, as the real engine's splitter does).
`after_tool_reply`, when set, is the reply to a request whose last message is a tool's result (role "tool"), so a
test scripts a model that calls a tool (`reply` holds the call) and then answers from its result.
`threads_drop_after` (a round index, -1 for never) says after that round, as the real engine's thread governor
would, that it went from 2 CPU threads to 1 because another program is busy.
`round_script`, when set, is a list of [drafter, kind] pairs the speculative rounds take in turn, as the real
controller plans them: ["ngram", "draft"] drafts DRAFT_RUN copied tokens, ["none", "paused"] drafts nothing (the
target writes one token of its own), so a test scripts a reply whose draft model pauses while copying goes on.
"""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Iterator, Optional, Sequence

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.context_fit import SessionCuts
from app.engine.errors import ModelFileError
from app.engine.protocol import CancelSignal, ChatEngine, fitted_reply
from app.engine.targets import LocalModel, ServerModel, Target
from app.engine.tools.calls import ToolFormat
from app.engine.events import FinishedEvent, GenerationStats, RoundEvent, ThreadsEvent, TokenEvent
from app.engine.reasoning.splitter import turn_end_closes_thinking

DEFAULT_REPLY = (
    "Here is a function:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\nIt returns the **sum** of `a` and `b`."
)

# round_reason, round_kind: what the speculative rounds say and why (e.g. "costly" with the controller's "speculation
# paused: ..."; the window reads only the kind); plain_reply:
# the text written without speculation, when it should differ from `reply` (sampling); log_line_in_chat: a line
# written to stderr (the engine's log) as each reply starts, as llama.cpp writes its warnings and errors.
DEFAULT_KNOBS = {
    "reply": DEFAULT_REPLY,
    "token_delay_s": 0.0,
    "crash_on_load": "",
    "hang_in_chat": False,
    "prompt_read_s": 0.0,  # a long prompt's chunk: this long after the prompt fits, deaf to the cancel flag
    "log_line_in_chat": "",
    "load_delay_s": 0.0,
    "refuse_tail": 0,
    "refused_text": " perhaps not quite",
    "drafter": "",
    "round_time_s": 0.02,
    "round_reason": "",
    "round_kind": "draft",
    "plain_reply": "",
    "bus_error_on_change": False,
    "threads_drop_after": -1,
    "illegal_instruction_in_chat": False,
    "reasoning": "",
    "after_tool_reply": "",
    "round_script": [],
}
DRAFT_RUN = 3  # drafted tokens the target keeps in every speculative round
REFUSED_ID = 9000  # refused proposals' ids count up from here; a kept token's id is 1000 + its index


class FakeEngineControl:
    """The test's side: picklable, so the window can pass it to the engine process as its engine factory."""

    _KNOBS = tuple(DEFAULT_KNOBS)

    def __init__(self, folder: Path):
        object.__setattr__(self, "folder", Path(folder))
        self.folder.mkdir(parents=True, exist_ok=True)
        self._write(dict(DEFAULT_KNOBS))

    def __call__(self, load: LoadSettings) -> ChatEngine:
        return FakeEngine(load, self.folder)

    def _knobs(self) -> dict:
        return json.loads((self.folder / "knobs.json").read_text())

    def _write(self, knobs: dict) -> None:
        tmp = self.folder / "knobs.json.tmp"
        tmp.write_text(json.dumps(knobs))
        os.replace(tmp, self.folder / "knobs.json")

    def __getattr__(self, name: str):
        if name in self._KNOBS:
            return self._knobs()[name]
        raise AttributeError(name)

    def __setattr__(self, name: str, value) -> None:
        if name not in self._KNOBS:
            raise AttributeError(f"FakeEngineControl has no knob {name!r}")
        self._write({**self._knobs(), name: value})

    def log(self) -> list[dict]:
        path = self.folder / "log.jsonl"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []

    @property
    def loads(self) -> int:
        return sum(1 for entry in self.log() if entry["event"] == "load_target")

    @property
    def configs(self) -> list[dict]:
        return [entry["config"] for entry in self.log() if entry["event"] == "chat"]

    @property
    def requests(self) -> list[list[dict]]:
        return [entry["messages"] for entry in self.log() if entry["event"] == "chat"]

    @property
    def n_ctx(self) -> int:
        loads = [entry for entry in self.log() if entry["event"] == "engine"]
        return loads[-1]["n_ctx"] if loads else 0

    @property
    def load_settings(self) -> dict:
        """The LoadSettings the engine holds now, as a dict ({} before the engine is made)."""
        loads = [entry for entry in self.log() if entry["event"] == "engine"]
        return loads[-1]["load"] if loads else {}


class FakeEngine:
    """Call from the engine process's main thread only (like SpecEngine). Implements app.engine.protocol.ChatEngine."""

    placement_note = "Scripted engine: no model runs anywhere."
    tool_format: ToolFormat = "hermes"
    template_notice = ""

    def __init__(self, load: LoadSettings = LoadSettings(), folder: Optional[Path] = None):
        self.folder = folder
        self.load_settings = load
        self._cuts = SessionCuts()
        self._log("engine", n_ctx=load.n_ctx, load=dataclasses.asdict(load))
        self.loaded_target: Optional[LocalModel] = None
        self.draft_path: Optional[Path] = None

    def _knobs(self) -> dict:
        if self.folder is None:
            return dict(DEFAULT_KNOBS)
        return json.loads((self.folder / "knobs.json").read_text())

    def _log(self, event: str, **fields) -> None:
        if self.folder is not None:
            with open(self.folder / "log.jsonl", "a") as log:
                log.write(json.dumps({"event": event, **fields}) + "\n")

    @property
    def n_ctx(self) -> int:
        return self.load_settings.n_ctx

    def load_target(self, target: Target, planned_draft=None) -> None:
        if isinstance(target, ServerModel):
            raise ModelFileError(f"{target} is a server's model; this engine loads files.")
        path = target.path
        if not path.is_file():
            raise ModelFileError(f"{path} does not exist.")
        self._crash_if_asked(path)
        started = time.monotonic()  # a big model on a slow disk; a test that lowers the knob ends the load there
        while time.monotonic() - started < self._knobs()["load_delay_s"]:
            time.sleep(0.02)
        self._log("load_target", path=str(path))
        self.loaded_target = target
        self._target_file, self._target_size = path, path.stat().st_size

    def _crash_if_asked(self, path: Path) -> None:
        """Die as llama.cpp does on a file it does not validate: its assertion on stderr, then abort()."""
        if self._knobs()["crash_on_load"] == path.name:
            os.write(2, b"llama-vocab.cpp:2211: GGML_ASSERT(id_to_token.size() == token_to_id.size()) failed\n")
            os.abort()

    def load_draft(self, path) -> None:
        if path is not None:
            self._crash_if_asked(Path(path))
        self.draft_path = Path(path) if path is not None else None

    def reconfigure(self, load: LoadSettings) -> None:
        self.load_settings = load
        self._log("engine", n_ctx=load.n_ctx, load=dataclasses.asdict(load))

    def idle_step(self) -> bool:
        return False

    parallel = 1  # one reply at a time: its events never wait for a step

    def step(self) -> bool:
        return False

    def unload(self) -> None:
        self.loaded_target = None
        self.draft_path = None

    def close(self) -> None:
        self.unload()

    def count_tokens(self, messages: Sequence[dict], config: Optional[GenerationConfig] = None) -> int:
        # As the real engine counts them: the tools' schema is part of the prompt it reads.
        tools = len(config.tools.split()) if config is not None and config.tools else 0
        return tools + sum(len(m["content"].split()) + 4 for m in messages)

    def fit_messages(
        self, messages: Sequence[dict], reserve_tokens: int, session: str = "default"
    ) -> tuple[list[dict], int]:
        return self._cuts.fit(messages, self.n_ctx - max(1, reserve_tokens), self.count_tokens, self.n_ctx, session)

    def chat(
        self,
        messages: Sequence[dict],
        config: GenerationConfig = GenerationConfig(),
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
        **_,
    ) -> Iterator:
        knobs = self._knobs()
        self._log("chat", messages=list(messages), config=asdict(config))
        if knobs["after_tool_reply"] and messages and messages[-1].get("role") == "tool":
            knobs = {**knobs, "reply": knobs["after_tool_reply"], "plain_reply": ""}
        return self._generate(config, cancel, request_id, knobs)

    def completion_tokens(self, prompt: str | Sequence[int], suffix: Optional[str] = None) -> list[int]:
        return list(prompt) if not isinstance(prompt, str) else [ord(c) for c in prompt]  # a character a token

    def complete(
        self,
        prompt: str | Sequence[int],
        config: GenerationConfig = GenerationConfig(),
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
    ) -> Iterator:
        knobs = self._knobs()
        self._log("complete", config=asdict(config))
        return self._generate(config, cancel, request_id, knobs)

    def reply(
        self,
        messages: Sequence[dict],
        config: GenerationConfig,
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
    ) -> Iterator:
        if self._knobs()["hang_in_chat"]:
            self._log("chat", messages=list(messages), config=asdict(config))
            return _hung()  # stuck before the prompt fits, as in a chat template
        return fitted_reply(self, messages, config, cancel=cancel, request_id=request_id)

    def _generate(self, config, cancel, request_id, knobs):
        if knobs["log_line_in_chat"]:
            print(knobs["log_line_in_chat"], file=sys.stderr, flush=True)
        if knobs["illegal_instruction_in_chat"]:
            os.kill(os.getpid(), signal.SIGILL)  # a llama.cpp built for instructions this CPU cannot run (AMX)
        if knobs["hang_in_chat"]:
            yield from _hung()
        time.sleep(knobs["prompt_read_s"])
        delay = knobs["token_delay_s"]
        speculative = config.speculative
        reply = knobs["reply"] if speculative or not knobs["plain_reply"] else knobs["plain_reply"]
        thinking = _split(knobs["reasoning"])
        whole = thinking + _split(reply)
        pieces = whole[: config.max_tokens]
        refused = _split(knobs["refused_text"]) or [" no"]
        reason = knobs["round_reason"] or "speculating: drafts pay off here"
        kind = knobs["round_kind"]
        if config.draft_max is not None:
            reason, kind = f"fixed draft length {config.draft_max}", "fixed"
        index = 0
        drafted = accepted = rounds = 0
        started = time.monotonic()
        while index < len(pieces):
            if cancel is not None and cancel.is_set():
                break
            drafter = self._drafter(config, knobs, rounds)
            script = knobs["round_script"]
            if speculative and script and config.draft_max is None:
                drafter, kind = script[rounds % len(script)]
            drafts = speculative and drafter != "none"
            chunk = pieces[index : index + (DRAFT_RUN if drafts else 0) + 1]
            n_draft = len(chunk) - 1
            tail = [refused[(rounds + j) % len(refused)] for j in range(knobs["refuse_tail"])] if drafts else []
            proposed_text = chunk[:n_draft] + tail
            proposed = [1000 + index + j for j in range(n_draft)] + [REFUSED_ID + j for j in range(len(tail))]
            own = index + len(chunk) - 1
            k = DRAFT_RUN + len(tail) if drafts else 0
            yield RoundEvent(
                request_id,
                drafter,
                k,
                len(proposed),
                n_draft,
                reason if speculative else "speculation is off",
                index=rounds,
                kind=kind if speculative else "unavailable",
                proposed=tuple(proposed),
                proposed_text=tuple(proposed_text),
                own=1000 + own,
                own_text=pieces[own],
                time_s=knobs["round_time_s"],
            )
            for j, text in enumerate(chunk):
                if delay:
                    time.sleep(delay)
                if knobs["bus_error_on_change"] and self._target_file.stat().st_size != self._target_size:
                    os.kill(os.getpid(), signal.SIGBUS)  # a read of the mapped file past its new end
                part = "reasoning" if index < len(thinking) else "answer"
                if j < n_draft:
                    yield TokenEvent(request_id, index, 1000 + index, text, "draft", drafter, rounds, part=part)
                else:
                    yield TokenEvent(request_id, index, 1000 + index, text, "target", None, rounds, part=part)
                index += 1
            if rounds == knobs["threads_drop_after"]:
                yield ThreadsEvent(request_id, 2, 1, "another program is busy", rounds)
            rounds += 1
            drafted += len(proposed)
            accepted += n_draft
        elapsed = max(1e-6, time.monotonic() - started)
        stop = "cancelled" if cancel is not None and cancel.is_set() else "eos"
        thought = min(index, len(thinking))
        text = "".join(pieces[thought:index])
        # As the real engine's splitter reads it: a model that ends its turn inside its thinking answered with it.
        yield turn_end_closes_thinking(
            FinishedEvent(
                request_id,
                text,
                GenerationStats(
                    tokens=index,
                    tokens_per_second=index / elapsed,
                    ttft_s=0.01,
                    drafted=drafted,
                    accepted=accepted,
                    acceptance_rate=accepted / drafted if drafted else 0.0,
                    rounds=rounds,
                    stop_reason="max_tokens" if stop == "eos" and index < len(whole) else stop,
                    prompt_tokens=12,
                    elapsed_s=elapsed,
                    reasoning_tokens=thought,
                    reasoning_s=0.5 if thought else 0.0,
                    ended_in_reasoning=bool(thinking) and index <= len(thinking),
                ),
                reasoning="".join(pieces[:thought]),
            ),
            unclosed=bool(thinking) and index <= len(thinking),
        )

    def _drafter(self, config: GenerationConfig, knobs: dict, round_index: int) -> str:
        if not config.speculative:
            return "none"
        forced = knobs["drafter"]
        if forced == "alternate":
            return ("model", "ngram")[round_index % 2]
        if forced:
            return forced
        return "ngram" if config.drafter == "ngram" or self.draft_path is None else "model"


def _split(text: str) -> list[str]:
    """Word-ish tokens that concatenate back to `text`."""
    pieces: list[str] = []
    current = ""
    for ch in text:
        if ch in " \n" and current:
            pieces.append(current)
            current = ""
        current += ch
    if current:
        pieces.append(current)
    return pieces


def _hung() -> Iterator:
    """A template or llama.cpp call that never returns and never looks at the cancel flag."""
    while True:
        time.sleep(0.05)
    yield  # a generator: the hang starts when the reply is read
