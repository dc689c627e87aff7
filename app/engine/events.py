"""Plain records the engine yields while it generates.

They carry no Qt and no references to models, so any front end (the window, the CLI, a test) can consume them,
and they can cross a thread boundary as they are.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Optional, Union

from app.engine.tools.calls import ToolCall

# The words of drafting, one type each (a request's choice of drafter is app.engine.config.DrafterChoice):
# - TokenSource: who wrote a token the reply kept: the target itself, or a draft it accepted.
TokenSource = Literal["draft", "target"]
# - DraftSource: who proposed a draft: the draft model, n-gram lookup of this request's text, or the history of
#   earlier requests (app.engine.speculation.history).
DraftSource = Literal["model", "ngram", "history"]
# - Drafter: who drafted a round: a DraftSource, or nobody ("none": plain decoding).
Drafter = Literal["model", "ngram", "history", "none"]
# - RoundKind: why a round is what it is: drafting expected to pay ("draft"), a short trial draft while paused
#   ("probe"), a fixed length ("fixed"), no draft because drafting would not pay ("paused": drafts are refused too
#   often; "costly": verifying costs more than even perfect acceptance saves) or cannot happen ("unavailable": no
#   room, nothing to draft from, speculation off), none while one token is timed ("timing"), a server's round,
#   whose reasons the server keeps ("server"), or a draft shortened or dropped because the other requests decoded
#   in the same batch make its rows cost more than they give, or would write slower for it ("batch",
#   app.engine.speculation.batch_plan).
RoundKind = Literal["draft", "probe", "fixed", "paused", "costly", "unavailable", "timing", "server", "batch"]
# - TokenPart: which part of a reply a token belongs to: the model's thinking ("reasoning", between the markers
#   app.engine.reasoning finds) or its answer.
TokenPart = Literal["reasoning", "answer"]
# The one table of drafter names: every DraftSource in the order lists and charts show them, and the sources that
# copy earlier text (no draft model: their drafts cost only the target's verification).
DRAFT_SOURCES: tuple[DraftSource, ...] = ("model", "ngram", "history")
COPYING_SOURCES: tuple[DraftSource, ...] = ("ngram", "history")
ROUND_KINDS: tuple[RoundKind, ...] = (
    "draft",
    "probe",
    "fixed",
    "paused",
    "costly",
    "unavailable",
    "timing",
    "server",
    "batch",
)


@dataclass(frozen=True)
class TokenChoice:
    """A token and its log-probability under the target's own distribution at one position: the log-softmax of the
    target's logits there, before temperature, penalties or a grammar (what OpenAI's `logprobs` report)."""

    token_id: int
    piece: bytes  # the bytes it writes (a control token's name for one that writes none)
    logprob: float


@dataclass(frozen=True)
class TokenLogprobs:
    """A written token's log-probability, and the likeliest tokens at its position (as many as were asked for)."""

    chosen: TokenChoice
    top: tuple[TokenChoice, ...] = ()


@dataclass(frozen=True)
class TokenEvent:
    """One emitted token.

    `source` is "draft" when the draft proposed it and the target accepted it, "target" when the target produced it
    itself (plain decoding, a correction after a rejection, or the bonus token after a fully accepted draft).
    `text` is a UTF-8-safe text delta: the texts of all token events of a reply concatenate to the reply. A token
    that ends in the middle of a multi-byte character carries "" and the completing token carries the character.

    `part` says whether the token is thinking or answer. The texts of a reply's "answer" events concatenate to
    FinishedEvent.text, those of its "reasoning" events to FinishedEvent.reasoning. The reasoning markers
    themselves (`<think>`, `</think>`, Harmony's channel headers) are in neither: their tokens carry "" and count
    as reasoning. Where a token's text holds both parts, the part after the boundary follows as an event with
    token_id -1 (no token of its own, as a flushed tail).
    """

    request_id: int
    index: int
    token_id: int
    text: str
    source: TokenSource
    # Who proposed an accepted draft token; None for the target's own tokens.
    drafter: Optional[DraftSource] = None
    round: int = -1  # the index of the round that produced it in this reply (-1: none, e.g. a flushed tail)
    part: TokenPart = "answer"
    # With GenerationConfig.logprobs: the token's log-probability from the target's own logits at its position, a
    # drafted token's too (the verify batch holds the target's row for every drafted position).
    logprobs: Optional[TokenLogprobs] = None
    # A control token's name, for a token that writes no text (Mistral's [TOOL_CALLS], Harmony's <|call|>): what a
    # tool-call reader needs to see; shown text never holds it.
    markup: str = ""


@dataclass(frozen=True)
class RoundEvent:
    """One speculation round finished: what was drafted, by whom, and how much the target accepted.

    `draft_len` is the k the drafter was allowed this round (0 means plain decoding, no draft work at all);
    `reason` says in words why that k was chosen, so a front end can explain itself, and `kind` says it as a word
    a front end can count and chart; `expected` is how many of the k tokens the controller expected to be kept
    (0 where nothing was expected: a fixed length, a probe, no draft).
    """

    request_id: int
    drafter: Drafter
    draft_len: int
    drafted: int
    accepted: int
    reason: str = ""
    index: int = 0  # the round's index in this reply, counted from 0
    proposed: tuple[int, ...] = ()  # every drafted token id, the refused ones included
    proposed_text: tuple[str, ...] = ()  # each proposed token's text (invalid UTF-8 replaced), for display
    own: int = -1  # the token the target wrote itself after the kept ones (-1: none)
    own_text: str = ""
    time_s: float = 0.0  # the round's time: drafting plus verifying
    threads: int = 0  # the CPU threads its forward passes used (0: not known, e.g. a remote server)
    kind: RoundKind = "unavailable"
    expected: float = 0.0


@dataclass(frozen=True)
class ThreadsEvent:
    """The engine changed how many CPU threads its forward passes use (app.engine.local.thread_governor), after
    round `after_round` of the reply (-1: before its first); `reason` says why in words."""

    request_id: int
    before: int
    after: int
    reason: str
    after_round: int = -1

    def describe(self) -> str:
        """In words, e.g. "2 → 1 CPU threads: another program is busy"."""
        return f"{self.before} → {self.after} CPU threads: {self.reason}"


def decode_speed(tokens: int, seconds: float) -> float:
    """The one definition of a reply's speed (tok/s): tokens written per second of writing them, the prompt's
    reading not counted. A finished reply counts from the end of the prompt to its last token; a reply stopped
    in the window counts from its first token to its last (the window does not see the prompt end), so it
    leaves out the first token."""
    return tokens / seconds if tokens > 0 and seconds > 0 else 0.0


@dataclass(frozen=True)
class GenerationStats:
    tokens: int = 0
    tokens_per_second: float = 0.0
    ttft_s: float = 0.0
    drafted: int = 0
    accepted: int = 0
    acceptance_rate: float = 0.0
    mean_accepted_run: float = 0.0
    rounds: int = 0
    stop_reason: str = ""  # "eos", "max_tokens", "context_full", "cancelled", "error"
    prompt_tokens: int = 0
    prompt_cached: int = 0  # prompt tokens whose KV cache was reused from the previous turn
    # The thinking part of `tokens` (app.engine.reasoning): its tokens, the drafted and accepted among them, and
    # the seconds from the reply's first token to the answer's first (or to the end, if it never answered).
    reasoning_tokens: int = 0
    reasoning_drafted: int = 0
    reasoning_accepted: int = 0
    reasoning_s: float = 0.0
    # The reply ended before its thinking did (a budget of max_tokens, a stop): there is no answer yet.
    ended_in_reasoning: bool = False
    # The model ended its turn inside its thinking (its end-of-turn token, never the end marker): it closed the
    # thinking by ending, so what it wrote is the answer (app.engine.reasoning.splitter.turn_end_closes_thinking);
    # its tokens came as reasoning while it streamed.
    thinking_unclosed: bool = False
    prompt_eval_s: float = 0.0
    elapsed_s: float = 0.0
    draft_len_histogram: dict[int, int] = field(default_factory=dict)
    # The accepted draft tokens by who proposed them (a DraftSource: "model", "ngram", "history").
    accepted_by: dict[str, int] = field(default_factory=dict)
    # Conversations' KV states kept in memory after this request (app.engine.local.kv_states): how many, the bytes
    # they take and the budget they are kept within (0: no cache, as with a server's model).
    kept_states: int = 0
    kept_bytes: int = 0
    kept_budget_bytes: int = 0
    # What the reply was asked to be sampled with, as the window keeps it, so that Compare with plain runs it the
    # same way (a regenerated reply of a greedy chat is sampled at 0.7 with a fresh seed); None: not recorded.
    temperature: Optional[float] = None
    seed: Optional[int] = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class FinishedEvent:
    """The reply is complete (or was stopped); `text` is the whole answer, `reasoning` the model's thinking before
    it (markers left out of both; "" where it did not think). `tool_calls`: the calls the reply made, read in the
    model's own format (app.engine.tools) where the request offered tools, and then left out of `text`; () where it
    offered none (an API client reads them itself) or the reply called nothing."""

    request_id: int
    text: str
    stats: GenerationStats
    reasoning: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    # With tools offered: the answer as a tool-call reader reads it, control tokens by their names (TokenEvent.markup),
    # where they differ from `text`; "" otherwise (read `text`).
    call_text: str = ""

    @property
    def calls_text(self) -> str:
        """What to read the reply's tool calls from."""
        return self.call_text or self.text


@dataclass(frozen=True)
class ContextEvent:
    """The prompt was fitted to the context before the reply: `dropped` earlier messages left out, `prompt_tokens`
    the prompt's size in a context of `n_ctx` tokens. The first record of every reply()."""

    request_id: int
    dropped: int
    prompt_tokens: int
    n_ctx: int


@dataclass(frozen=True)
class NoticeEvent:
    """Something about this reply a person should know, e.g. why the model's chat template was not used."""

    request_id: int
    text: str


@dataclass(frozen=True)
class WaitingEvent:
    """The reply has nothing new until the batch's next step. Only a reply decoded in a batch with others yields it
    (app.engine.local.batch): whoever drives the replies goes on to the next one there, and steps the engine once
    every reply waits (ChatEngine.step). It never leaves the engine's process."""

    request_id: int


# Every record carries its `request_id`: the window drops what belongs to a request it no longer waits for.
EngineEvent = Union[TokenEvent, RoundEvent, ThreadsEvent, FinishedEvent, ContextEvent, NoticeEvent, WaitingEvent]
