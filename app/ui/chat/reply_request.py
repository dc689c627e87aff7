"""One reply being generated, as the conversation gathers it: what was asked (a ReplyRequestSpec), and the tokens
and rounds that have arrived so far, each token a TokenRecord (text, origin, round, part). Plain data, no Qt; GUI
thread only (owned by Conversation)."""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Optional

from app.common.units import plural
from app.engine.config import GenerationConfig
from app.engine.events import GenerationStats, RoundEvent, TokenEvent, decode_speed
from app.store.provenance import RoundRecord, TokenRecord, token_records
from app.store import Message


# How a tool call opens in a reply, in the formats the window reads (app.engine.tools): Qwen's tag, and the fenced
# JSON small models write their calls in.
CALL_OPENINGS = ("<tool_call>", "```json", "```\n{")


def call_start(text: str) -> int:
    """Where a tool call may begin in `text` (its opening, or the start of one still being written at its end);
    len(text) where none can."""
    starts = [at for opening in CALL_OPENINGS if (at := text.find(opening)) >= 0]
    for opening in CALL_OPENINGS:
        for n in range(min(len(opening) - 1, len(text)), 0, -1):
            if text.endswith(opening[:n]):
                starts.append(len(text) - n)
                break
    return min(starts, default=len(text))


@dataclass(frozen=True)
class ReplyRequestSpec:
    """What a request for a reply is asked with, as one record from the window to the conversation: the
    generation settings, the chat's system prompt, and the names the transcript labels the reply with."""

    config: GenerationConfig
    system_prompt: str
    target_name: str
    draft_name: Optional[str]
    sees_pictures: bool = True  # False: the model cannot see, and the chat's pictures go as lines naming them


@dataclass
class ReplySave:
    """One save of a reply: everything copied when it was asked for, so the reply can keep growing meanwhile."""

    request_id: int
    chat_id: int
    message_id: Optional[int]  # the stored reply the GUI knows of (a continued one), else None
    content: str
    stats: GenerationStats
    target_name: str
    draft_name: Optional[str]
    tokens: list[TokenRecord]  # the answer's tokens (their rounds point into `rounds`)
    rounds: list[RoundRecord]
    final: bool  # the reply's last save: the saver forgets the reply after it
    on_done: Callable[[Optional[Message], float], None]  # (the stored reply if final, seconds the save took)
    on_failed: Callable[[BaseException], None]
    done: threading.Event = field(default_factory=threading.Event)
    result: Optional[tuple[Optional[Message], float]] = None
    error: Optional[BaseException] = None
    delivered: bool = False
    # The reply's thinking, without markers, and its tokens; "" and None for a reply that did not think.
    reasoning: str = ""
    reasoning_tokens: Optional[list[TokenRecord]] = None


@dataclass
class ReplyRequest:
    """One reply being generated: what was asked, and what has arrived so far. Token rounds index the whole
    reply's rounds (the part before a Continue included): the engine counts this run's rounds from 0, so they are
    shifted by the rounds before."""

    request_id: int
    chat_id: int
    target_name: str
    draft_name: Optional[str]
    message_id: Optional[int] = None  # the stored reply, once its first tokens were saved
    continued: list[TokenRecord] = field(default_factory=list)  # the reply's answer before a Continue
    rounds: list[RoundRecord] = field(default_factory=list)
    round_offset: int = 0
    started: float = field(default_factory=time.monotonic)
    first_token_at: Optional[float] = None
    last_token_at: Optional[float] = None
    tokens: list[TokenRecord] = field(default_factory=list)  # this run's answer
    pending: list[TokenRecord] = field(default_factory=list)  # answer tokens not yet shown
    drafted: int = 0
    accepted: int = 0
    prompt_tokens: int = 0
    streaming: bool = False
    readout_at: float = 0.0  # when the live readout was last refreshed
    saved_at: float = 0.0
    saved_tokens: int = 0
    save_cost_s: float = 0.0  # how long the last save while streaming took
    # The reply's thinking (part "reasoning"), kept apart from the answer as the engine splits it: its tokens (a
    # continued reply's earlier thinking first), and those not yet shown.
    reasoning: list[TokenRecord] = field(default_factory=list)
    pending_reasoning: list[TokenRecord] = field(default_factory=list)
    answer_started_at: Optional[float] = None  # the first answer token's arrival, after any thinking
    answer_shown: bool = False  # the view was told the answer started (its Thinking section folds)
    sampling: tuple[float, Optional[int]] = (0.0, None)  # the temperature and seed it was asked with
    offers_tools: bool = False  # the request offered tools: a call's text is held back while it streams
    with_model: bool = False  # the request may draft with its draft model (one is loaded, the chat allows it)

    @classmethod
    def continuing(cls, request_id: int, message: Message, target_name: str, draft_name: Optional[str]) -> ReplyRequest:
        """A request that carries on the stored reply `message`, its tokens and rounds kept in front."""
        continued = (
            token_records(message.tokens, message.token_rounds)
            if message.tokens
            else [TokenRecord(message.content)]
            if message.content
            else []
        )
        earlier = list(message.rounds or []) if message.tokens else []
        reasoning = (
            token_records(message.reasoning_tokens, message.reasoning_token_rounds, part="reasoning")
            if message.reasoning_tokens
            else [TokenRecord(message.reasoning, part="reasoning")]
            if message.reasoning
            else []
        )
        return cls(
            request_id,
            message.chat_id,
            target_name,
            draft_name,
            message_id=message.id,
            continued=continued,
            rounds=earlier,
            round_offset=len(earlier),
            reasoning=reasoning,
        )

    def add_token(self, event: TokenEvent) -> None:
        """Keep a token with its origin and round, and queue it for the view."""
        now = time.monotonic()
        if self.first_token_at is None:
            self.first_token_at = now
        self.last_token_at = now
        index = event.round + self.round_offset if event.round >= 0 else -1
        # A round the engine never reported cannot be pointed at (the reply is still saved, without it).
        token = TokenRecord.from_event(event, index if index < len(self.rounds) else -1)
        if token.part == "reasoning":
            self.reasoning.append(token)
            self.pending_reasoning.append(token)
            return
        if self.answer_started_at is None and token.text:
            self.answer_started_at = now
        self.tokens.append(token)
        self.pending.append(token)

    def add_round(self, event: RoundEvent) -> None:
        self.rounds.append(RoundRecord.from_event(event))
        self.drafted += event.drafted
        self.accepted += event.accepted

    def drafters(self) -> frozenset[str]:
        """The drafters at work in this reply ("model", "ngram", "history"): those that drafted in its rounds so
        far, and the draft model wherever the request may use it. A draft model the controller paused in an
        earlier reply drafts in none of this one's rounds, yet it is the one paused while copying goes on."""
        drafted = frozenset(r.drafter for r in self.rounds if r.proposed and r.drafter != "none")
        return drafted | {"model"} if self.with_model else drafted

    def has_tokens(self) -> bool:
        """Whether any token of this run arrived (thinking or answer)."""
        return bool(self.tokens or self.reasoning)

    def take_pending(self) -> list[TokenRecord]:
        """The answer tokens not yet shown; they count as shown from now on. Where tools were offered, those from
        where a tool call may begin stay pending: the finished reply shows the call as its block, so its text never
        flashes by as a code block first."""
        pending, self.pending = self.pending, []
        if not self.offers_tools or not pending:
            return pending
        text = "".join(t.text for t in self.tokens)
        cut = call_start(text)
        at = len(text) - sum(len(t.text) for t in pending)  # where the first pending token starts
        for n, token in enumerate(pending):
            if at + len(token.text) > cut:
                self.pending = pending[n:]
                return pending[:n]
            at += len(token.text)
        return pending

    def take_pending_reasoning(self) -> list[TokenRecord]:
        """The thinking tokens not yet shown; they count as shown from now on."""
        pending, self.pending_reasoning = self.pending_reasoning, []
        return pending

    def reasoning_text(self) -> str:
        return "".join(t.text for t in self.reasoning)

    def thinking_seconds(self) -> float:
        """How long the thinking took so far: from the first token to the answer's first (or to now)."""
        if self.first_token_at is None:
            return 0.0
        return (self.answer_started_at or self.last_token_at or self.first_token_at) - self.first_token_at

    def answer_from_thinking(self) -> None:
        """The model ended its turn inside its thinking (GenerationStats.thinking_unclosed): what it thought is the
        answer, stored, copied and sent as one."""
        self.tokens = [dataclasses.replace(t, part="answer") for t in self.reasoning] + self.tokens
        self.reasoning, self.pending_reasoning = [], []

    def reply_tokens(self) -> list[TokenRecord]:
        return self.continued + self.tokens

    def reply_text(self) -> str:
        return "".join(t.text for t in self.reply_tokens())

    def continued_text(self) -> str:
        """The answer's text before a Continue ("" for a new reply)."""
        return "".join(t.text for t in self.continued)

    def save_job(
        self,
        stats: GenerationStats,
        reply: str,
        *,
        final: bool,
        on_done: Callable[[Optional[Message], float], None],
        on_failed: Callable[[BaseException], None],
    ) -> ReplySave:
        """A save of the reply as it stands (copied: the reply keeps growing while the saver stores it)."""
        return ReplySave(
            self.request_id,
            self.chat_id,
            self.message_id,
            reply,
            stats,
            self.target_name,
            self.draft_name,
            self.reply_tokens(),
            list(self.rounds),
            final,
            on_done,
            on_failed,
            reasoning=self.reasoning_text(),
            reasoning_tokens=list(self.reasoning) or None,
        )

    def live_readout(self) -> str:
        """The status line while the reply streams: speed, tokens, acceptance."""
        n = len(self.tokens) + len(self.reasoning)
        speed = decode_speed(n - 1, (self.last_token_at or 0) - (self.first_token_at or 0))
        parts = [f"{speed:.1f} tok/s" if speed else "…", plural(n, "token")]
        if self.reasoning and not self.tokens:
            parts = [f"thinking… {plural(len(self.reasoning), 'token')}, {self.thinking_seconds():.1f} s"]
        if self.drafted:
            parts.append(f"{100 * self.accepted / self.drafted:.0f}% accepted")
        return "  ·  ".join(parts)

    def partial_stats(self, stop_reason: str) -> GenerationStats:
        """Stats of a reply that ended without the engine's own numbers (stopped, or failed midway)."""
        now = self.last_token_at or time.monotonic()
        decode_time = (now - self.first_token_at) if self.first_token_at else 0.0
        n = len(self.tokens) + len(self.reasoning)
        return GenerationStats(
            tokens=n,
            tokens_per_second=decode_speed(n - 1, decode_time),
            ttft_s=(self.first_token_at - self.started) if self.first_token_at else 0.0,
            drafted=self.drafted,
            accepted=self.accepted,
            acceptance_rate=self.accepted / self.drafted if self.drafted else 0.0,
            rounds=len(self.rounds) - self.round_offset,
            stop_reason=stop_reason,
            prompt_tokens=self.prompt_tokens,
            elapsed_s=now - self.started,
            reasoning_tokens=len(self.reasoning),
            reasoning_s=self.thinking_seconds() if self.reasoning else 0.0,
            ended_in_reasoning=bool(self.reasoning) and not self.tokens,
        )

    def with_earlier_part(self, stats: GenerationStats) -> GenerationStats:
        """A continued reply's stats count its tokens from before the Continue too (speeds stay this run's)."""
        return dataclasses.replace(stats, tokens=stats.tokens + len(self.continued))
