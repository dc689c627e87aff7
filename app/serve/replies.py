"""One job's records as OpenAI's response shapes, with SpecChat's provenance and llama-server's counters.

Every chunk (and a whole reply) carries `specchat.tokens`: each token's text, its part ("reasoning" or "answer")
and its drafter, "model" (the draft model proposed it and the target kept it), "ngram" (copied from earlier text
and kept), "history" or null (the target wrote it itself). With "timings_per_token": true each chunk also carries llama-server's cumulative `timings`
(predicted_n, draft_n, draft_n_accepted, ...), so clients written for llama-server count and highlight drafts.
Stop strings are honoured here: text that might begin one is held back until it cannot, and a match ends the reply.

A thinking model's reasoning goes apart from the answer, as llama-server's deepseek format sends it: in
`reasoning_content`, and the same text in `reasoning` (vLLM's and OpenRouter's name), of streamed deltas and of the
whole message; `content` holds the answer only, and usage counts the reasoning tokens in
`completion_tokens_details.reasoning_tokens`. Stop strings and tool calls are read in the answer only: a model that
thinks about calling a tool, or mentions a stop string while it thinks, has not done so.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Optional

from app.engine.events import FinishedEvent, GenerationStats, RoundEvent, TokenEvent, TokenLogprobs, TokenPart
from app.engine.tools.calls import ToolFormat, reader_text
from app.engine.tools.stream import ToolCallStream
from app.serve.completions.requests import ApiRequest
from app.serve.logprob_replies import chat_logprobs
from app.serve.responses.catalog import codex_models
from app.serve.tool_replies import call_stream, frames, message_tool_calls

# OpenAI's error types by HTTP status (anything else is a "server_error").
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    408: "invalid_request_error",
    413: "invalid_request_error",
    503: "server_busy",
}

# The engine's stop reasons as OpenAI's finish_reason.
FINISH_REASONS = {"eos": "stop", "max_tokens": "length", "context_full": "length", "stop_string": "stop"}


@dataclass
class HeldToken:
    text: str
    drafter: Optional[str]
    counted: bool  # a real token (False: the flushed tail of a split character)
    predicted_n: int  # the counters when it arrived
    draft_n: int
    draft_n_accepted: int
    part: TokenPart = "answer"
    logprobs: Optional[TokenLogprobs] = None
    markup: str = ""  # a call marker's name (a control token, its text ""): what a tool-call reader reads

    @property
    def call_text(self) -> str:
        """Its text as the tool-call reader reads it: control tokens by their names (Mistral's [TOOL_CALLS])."""
        return self.text or self.markup

    @property
    def answer_chars(self) -> int:
        """Its characters that a stop string is matched in (the answer's only)."""
        return len(self.text) if self.part == "answer" else 0

    def provenance(self) -> dict:
        return {"text": self.text, "drafter": self.drafter, "part": self.part}


def _runs(tokens: list[HeldToken]) -> list[tuple[TokenPart, list[HeldToken]]]:
    """`tokens` in runs of one part, in order; a token with no text (a marker's) joins the run it arrives in."""
    runs: list[tuple[TokenPart, list[HeldToken]]] = []
    for token in tokens:
        if runs and (runs[-1][0] == token.part or not token.text):
            runs[-1][1].append(token)
        else:
            runs.append((token.part, [token]))
    return runs


@dataclass
class ReplyShaper:
    """Turns one request's token, round and finish records into response dicts. One per request; any one thread."""

    request: ApiRequest
    model: str = ""
    prompt_tokens: int = 0
    id: str = field(default_factory=lambda: f"chatcmpl-{uuid.uuid4().hex[:24]}")
    created: int = field(default_factory=lambda: int(time.time()))
    stopped_by_string: bool = False
    stop_string: str = ""  # the one that ended the reply (the first in the text)
    _held: list[HeldToken] = field(default_factory=list)
    _released: list[HeldToken] = field(default_factory=list)
    _predicted_n: int = 0
    _reasoning_n: int = 0
    _draft_n: int = 0
    _draft_n_accepted: int = 0
    _first_token_at: Optional[float] = None
    tool_format: ToolFormat = "hermes"  # how the loaded model writes a call (its template says)
    _calls: Optional[ToolCallStream] = None
    _unsent: list[HeldToken] = field(default_factory=list)  # provenance of tokens whose text the tool splitter holds

    def __post_init__(self) -> None:
        self._calls = call_stream(self.request.tools, self.tool_format)

    # -- records in ---------------------------------------------------------------------------------------------

    def on_round(self, event: RoundEvent) -> None:
        # A round's record comes before its tokens, so its counts are in every chunk that holds one of them.
        self._draft_n += event.drafted
        self._draft_n_accepted += event.accepted

    def on_token(self, event: TokenEvent) -> list[HeldToken]:
        """The tokens that can go out now (none while text that may begin a stop string is held)."""
        if self.stopped_by_string:
            return []
        if self._first_token_at is None:
            self._first_token_at = time.monotonic()
        counted = event.token_id >= 0
        self._predicted_n += counted
        self._reasoning_n += counted and event.part == "reasoning"
        drafter = event.drafter if event.source == "draft" else None
        self._held.append(
            HeldToken(
                event.text,
                drafter,
                counted,
                self._predicted_n,
                self._draft_n,
                self._draft_n_accepted,
                event.part,
                event.logprobs,
                reader_text("", event.markup, self.tool_format),
            )
        )
        return self._release()

    def flush(self) -> list[HeldToken]:
        """At the reply's end: whatever was held back for a stop string that never came."""
        out, self._held = self._held, []
        self._released += out
        return out

    def _release(self) -> list[HeldToken]:
        stops = self.request.stop
        if not stops:
            return self.flush()
        text = "".join(t.text for t in self._held if t.part == "answer")
        hits = [(i, s) for i, s in ((text.find(s), s) for s in stops) if i >= 0]
        if hits:
            self.stopped_by_string = True
            at, self.stop_string = min(hits)
            return self._release_chars(at, cut=True)
        keep = max(
            (n for s in stops for n in range(min(len(s) - 1, len(text)), 0, -1) if text.endswith(s[:n])), default=0
        )
        return self._release_chars(len(text) - keep, cut=False)

    def _release_chars(self, chars: int, cut: bool) -> list[HeldToken]:
        """Release the held tokens that lie within the first `chars` characters of the answer (reasoning tokens
        among them go as they come); with `cut`, the token that straddles that point goes out cut short and the
        rest is dropped (it is the stop string and after)."""
        out: list[HeldToken] = []
        used = 0
        while self._held and used + self._held[0].answer_chars <= chars:
            token = self._held.pop(0)
            used += token.answer_chars
            out.append(token)
        if cut:
            if self._held and chars > used:
                token = self._held[0]
                token.text = token.text[: chars - used]
                out.append(token)
            self._held = []
        self._released += out
        return out

    # -- shapes out ---------------------------------------------------------------------------------------------

    def _base(self, kind: str) -> dict:
        return {"id": self.id, "object": kind, "created": self.created, "model": self.model or self.request.model}

    def _timings(self, last: Optional[HeldToken], stats: Optional[GenerationStats] = None) -> dict:
        predicted_n = last.predicted_n if last else self._predicted_n
        timings: dict[str, float] = {
            "prompt_n": self.prompt_tokens,
            "predicted_n": predicted_n,
            "draft_n": last.draft_n if last else self._draft_n,
            "draft_n_accepted": last.draft_n_accepted if last else self._draft_n_accepted,
        }
        if stats is not None:
            timings.update(
                prompt_n=stats.prompt_tokens - stats.prompt_cached,
                cache_n=stats.prompt_cached,
                prompt_ms=stats.prompt_eval_s * 1000.0,
                predicted_per_second=stats.tokens_per_second,
                predicted_n=stats.tokens,
            )
        elif self._first_token_at is not None:
            timings["predicted_ms"] = (time.monotonic() - self._first_token_at) * 1000.0
        return timings

    def first_chunk(self) -> dict:
        chunk = self._base("chat.completion.chunk")
        chunk["choices"] = [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]
        return chunk

    def chunks(self, tokens: list[HeldToken], last: bool = False) -> list[dict]:
        """The chunks for released `tokens` (with `last`, also what the tool splitter still holds): a chunk per run
        of reasoning, and the answer's as answer_chunks says."""
        out = []
        for part, run in _runs(tokens):
            out += [self.reasoning_chunk(run)] if part == "reasoning" else self.answer_chunks(run)
        if last and self._calls is not None:
            out += self.answer_chunks([], last=True)
        return out

    def reasoning_chunk(self, tokens: list[HeldToken]) -> dict:
        """Thinking as llama-server's deepseek format streams it, and under vLLM's name; never in `content`."""
        text = "".join(t.text for t in tokens)
        chunk = self._base("chat.completion.chunk")
        chunk["choices"] = [
            {"index": 0, "delta": {"reasoning_content": text, "reasoning": text}, "finish_reason": None}
        ]
        chunk["specchat"] = {"tokens": [t.provenance() for t in self._unsent + tokens]}
        if self.request.timings_per_token:
            chunk["timings"] = self._timings(tokens[-1])
        self._unsent = []
        return chunk

    def answer_chunks(self, tokens: list[HeldToken], last: bool = False) -> list[dict]:
        """Without tools, one chunk of the tokens' text; with tools, content and calls as the splitter reads them,
        the tokens' provenance on the first chunk that goes out."""
        if self._calls is None:
            return [self.token_chunk(tokens)] if tokens else []
        text = "".join(t.call_text for t in tokens)
        pieces = self._calls.feed(text) if text else []
        if last:
            pieces += self._calls.finish()
        self._unsent += tokens
        out = []
        for frame in frames(pieces):
            chunk = self._base("chat.completion.chunk")
            delta = frame.delta
            chunk["choices"] = [{"index": 0, "delta": delta, "finish_reason": None, **self._logprobs(self._unsent)}]
            chunk["specchat"] = {"tokens": [t.provenance() for t in self._unsent]}
            if frame.call is not None:
                chunk["specchat"]["call"] = frame.call
            if self.request.timings_per_token:
                chunk["timings"] = self._timings(self._unsent[-1] if self._unsent else None)
            self._unsent = []
            out.append(chunk)
        return out

    def token_chunk(self, tokens: list[HeldToken]) -> dict:
        chunk = self._base("chat.completion.chunk")
        chunk["choices"] = [
            {
                "index": 0,
                "delta": {"content": "".join(t.text for t in tokens)},
                "finish_reason": None,
                **self._logprobs(tokens),
            }
        ]
        chunk["specchat"] = {"tokens": [t.provenance() for t in tokens]}
        if self.request.timings_per_token:
            chunk["timings"] = self._timings(tokens[-1] if tokens else None)
        return chunk

    def _logprobs(self, tokens: list[HeldToken]) -> dict:
        """A choice's `logprobs` field for `tokens` (the answer's written ones), when the request asked for them."""
        if not self.request.config.logprobs:
            return {}
        return {"logprobs": chat_logprobs([t.logprobs for t in tokens if t.part == "answer" and t.logprobs])}

    def finish_reason(self, finished: Optional[FinishedEvent]) -> str:
        if self.stopped_by_string:
            return "stop"
        reason = finished.stats.stop_reason if finished is not None else ""
        if self._calls is not None and self._calls.calls and reason != "max_tokens":
            return "tool_calls"
        return FINISH_REASONS.get(reason, "stop")

    def _summary(self, finished: Optional[FinishedEvent]) -> dict:
        stats = finished.stats if finished is not None else GenerationStats()
        return {
            "drafted": stats.drafted,
            "accepted": stats.accepted,
            "rounds": stats.rounds,
            "tokens_per_second": round(stats.tokens_per_second, 2),
            "reasoning_tokens": stats.reasoning_tokens,
            "reasoning_drafted": stats.reasoning_drafted,
            "reasoning_accepted": stats.reasoning_accepted,
            "ended_in_reasoning": stats.ended_in_reasoning,
        }

    def _usage(self, finished: Optional[FinishedEvent] = None) -> dict:
        completion = self._predicted_n
        usage: dict = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": completion,
            "total_tokens": self.prompt_tokens + completion,
            "completion_tokens_details": {"reasoning_tokens": self._reasoning_n},
        }
        if finished is not None:  # OpenAI's shape: the prompt tokens whose KV cache was kept from an earlier turn
            usage["prompt_tokens_details"] = {"cached_tokens": finished.stats.prompt_cached}
        return usage

    def last_chunks(self, finished: Optional[FinishedEvent]) -> list[dict]:
        """The chunk with finish_reason (and the reply's totals), then the usage chunk when asked for."""
        chunk = self._base("chat.completion.chunk")
        chunk["choices"] = [{"index": 0, "delta": {}, "finish_reason": self.finish_reason(finished)}]
        chunk["specchat"] = {"tokens": [t.provenance() for t in self._unsent], **self._summary(finished)}
        self._unsent = []
        if self.request.timings_per_token:
            chunk["timings"] = self._timings(None, finished.stats if finished else None)
        out = [chunk]
        if self.request.include_usage:
            usage = self._base("chat.completion.chunk")
            usage.update(choices=[], usage=self._usage(finished))
            out.append(usage)
        return out

    def whole_reply(self, finished: Optional[FinishedEvent]) -> dict:
        """The non-streamed response: the whole text, usage, and every token's provenance."""
        reply = self._base("chat.completion")
        text = "".join(t.text for t in self._released if t.part == "answer")
        reasoning = "".join(t.text for t in self._released if t.part == "reasoning")
        message: dict = {"role": "assistant", "content": text}
        if reasoning:
            message.update(reasoning_content=reasoning, reasoning=reasoning)
        if self._calls is not None:
            self._calls.feed("".join(t.call_text for t in self._released if t.part == "answer"))
            self._calls.finish()
            message["content"] = self._calls.content or (None if self._calls.calls else "")
            if self._calls.calls:
                message["tool_calls"] = message_tool_calls(self._calls.calls)
        reply["choices"] = [
            {
                "index": 0,
                "message": message,
                "finish_reason": self.finish_reason(finished),
                **self._logprobs(self._released),
            }
        ]
        reply["usage"] = self._usage(finished)
        reply["specchat"] = {"tokens": [t.provenance() for t in self._released], **self._summary(finished)}
        if self.request.timings_per_token:
            reply["timings"] = self._timings(None, finished.stats if finished else None)
        return reply


def error_body(status: int, message: str) -> dict:
    """OpenAI's error shape, with one sentence."""
    return {"error": {"message": message, "type": ERROR_TYPES.get(status, "server_error"), "code": status}}


def models_list(target: str, draft: str, n_ctx: int, created: int) -> dict:
    """/v1/models: the loaded target, owned by "specchat"; its draft is named in the entry's `specchat` field, and
    `models` describes it as Codex CLI's model catalog does (app.serve.responses.catalog)."""
    if not target:
        return {"object": "list", "data": [], "models": []}
    entry = {
        "id": target,
        "object": "model",
        "created": created,
        "owned_by": "specchat",
        "specchat": {"draft": draft or None, "n_ctx": n_ctx},
    }
    return {"object": "list", "data": [entry], "models": codex_models(target, n_ctx)}
