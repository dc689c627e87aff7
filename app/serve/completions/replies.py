"""One completion's records as OpenAI's text-completion shapes (`text_completion` objects, streamed or whole).

The records are read as a chat reply's are (replies.ReplyShaper: stop strings held back and honoured, SpecChat's
provenance and llama-server's counters); only the shapes differ: a choice holds `text` (the prompt first, with
`echo`) and completions' `logprobs` lists.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Optional

from app.engine.events import FinishedEvent
from app.serve.completions.requests import CompletionRequest
from app.serve.logprob_replies import completion_logprobs
from app.serve.replies import ReplyShaper, HeldToken


@dataclass
class CompletionShaper(ReplyShaper):
    """A ReplyShaper whose shapes are text completions. One per request; any one thread."""

    id: str = field(default_factory=lambda: f"cmpl-{uuid.uuid4().hex[:24]}")
    _chars_sent: int = 0  # characters of the choice's text already sent: where the next token's text starts

    @property
    def completion(self) -> CompletionRequest:
        assert isinstance(self.request, CompletionRequest)
        return self.request

    def _echo(self) -> str:
        prompt = self.completion.prompt
        return prompt if self.completion.echo and isinstance(prompt, str) else ""

    def _choice(self, tokens: list[HeldToken], text: str, finish_reason: Optional[str] = None) -> dict:
        logprobs = None
        if self.completion.logprobs is not None:
            at = self._chars_sent + len(text) - len("".join(t.text for t in tokens))
            logprobs = completion_logprobs([t.logprobs for t in tokens if t.logprobs], at)
        self._chars_sent += len(text)
        return {"text": text, "index": 0, "logprobs": logprobs, "finish_reason": finish_reason}

    def _chunk(self, tokens: list[HeldToken], text: str, finish_reason: Optional[str] = None) -> dict:
        chunk = self._base("text_completion")
        chunk["choices"] = [self._choice(tokens, text, finish_reason)]
        chunk["specchat"] = {"tokens": [t.provenance() for t in tokens]}
        if self.request.timings_per_token:
            chunk["timings"] = self._timings(tokens[-1] if tokens else None)
        return chunk

    def first_chunk(self) -> dict:
        """The echoed prompt (or nothing), before the first token."""
        return self._chunk([], self._echo())

    def chunks(self, tokens: list[HeldToken], last: bool = False) -> list[dict]:
        return [self._chunk(tokens, "".join(t.text for t in tokens))] if tokens else []

    def last_chunks(self, finished: Optional[FinishedEvent]) -> list[dict]:
        chunk = self._base("text_completion")
        chunk["choices"] = [{"text": "", "index": 0, "logprobs": None, "finish_reason": self.finish_reason(finished)}]
        chunk["specchat"] = {"tokens": [], **self._summary(finished)}
        if self.request.timings_per_token:
            chunk["timings"] = self._timings(None, finished.stats if finished else None)
        out = [chunk]
        if self.request.include_usage:
            usage = self._base("text_completion")
            usage.update(choices=[], usage=self._usage(finished))
            out.append(usage)
        return out

    def whole_reply(self, finished: Optional[FinishedEvent]) -> dict:
        reply = self._base("text_completion")
        tokens = self._released
        text = self._echo() + "".join(t.text for t in tokens)
        reply["choices"] = [self._choice(tokens, text, self.finish_reason(finished))]
        reply["usage"] = self._usage(finished)
        reply["specchat"] = {"tokens": [t.provenance() for t in tokens], **self._summary(finished)}
        if self.request.timings_per_token:
            reply["timings"] = self._timings(None, finished.stats if finished else None)
        return reply
