"""A stand-in for SpecEngine with the same interface, for UI tests that need exact control over timing and events.

It yields a scripted reply: with speculation on, runs of draft tokens the "target" accepted, then one target
token; with it off, target tokens only. A delay per token lets tests stop a reply midway. Runs on the inference
thread like the real engine.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Iterator, Optional, Sequence

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.errors import ModelFileError, PromptTooLongError
from app.engine.events import FinishedEvent, GenerationStats, RoundEvent, TokenEvent

DEFAULT_REPLY = (
    "Here is a function:\n\n```python\ndef add(a, b):\n    return a + b\n```\n\n"
    "It returns the **sum** of `a` and `b`."
)


class FakeEngine:
    """Call from the inference thread only (like SpecEngine)."""

    reply = DEFAULT_REPLY
    token_delay_s = 0.0
    words_per_token = 1
    n_ctx_default = 4096

    def __init__(self, load: LoadSettings = LoadSettings()):
        self.load_settings = load
        self.target_path: Optional[Path] = None
        self.draft_path: Optional[Path] = None
        self.requests: list[list[dict]] = []
        self.configs: list[GenerationConfig] = []
        self.loads = 0

    @property
    def n_ctx(self) -> int:
        return self.load_settings.n_ctx

    def load_target(self, path) -> None:
        path = Path(path)
        if not path.is_file():
            raise ModelFileError(f"{path} does not exist.")
        self.loads += 1
        self.target_path = path

    def load_draft(self, path) -> None:
        self.draft_path = Path(path) if path is not None else None

    def reconfigure(self, load: LoadSettings) -> None:
        self.load_settings = load

    def unload(self) -> None:
        self.target_path = None
        self.draft_path = None

    def close(self) -> None:
        self.unload()

    def count_tokens(self, messages: Sequence[dict]) -> int:
        return sum(len(m["content"].split()) + 4 for m in messages)

    def fit_messages(self, messages: Sequence[dict], reserve_tokens: int) -> tuple[list[dict], int]:
        kept = list(messages)
        dropped = 0
        while self.count_tokens(kept) + reserve_tokens > self.n_ctx:
            system = 1 if kept and kept[0]["role"] == "system" else 0
            if len(kept) - system <= 1:
                raise PromptTooLongError(self.count_tokens(kept) + reserve_tokens, self.n_ctx)
            del kept[system]
            dropped += 1
        return kept, dropped

    def chat(self, messages: Sequence[dict], config: GenerationConfig = GenerationConfig(), *,
             cancel: Optional[threading.Event] = None, request_id: int = 0, **_) -> Iterator:
        self.requests.append(list(messages))
        self.configs.append(config)
        return self._generate(config, cancel, request_id)

    def _generate(self, config, cancel, request_id):
        pieces = _split(self.reply)[: config.max_tokens]
        speculative = config.speculative
        drafter = "none" if not speculative else ("ngram" if config.drafter == "ngram" or self.draft_path is None
                                                   else "model")
        index = 0
        drafted = accepted = rounds = 0
        started = time.monotonic()
        while index < len(pieces):
            if cancel is not None and cancel.is_set():
                break
            run = 3 if speculative else 0
            chunk = pieces[index:index + run + 1]
            n_draft = min(run, len(chunk) - 1) if speculative else 0
            for k, text in enumerate(chunk):
                if self.token_delay_s:
                    time.sleep(self.token_delay_s)
                source = "draft" if k < n_draft else "target"
                yield TokenEvent(request_id, index, 1000 + index, text, source)
                index += 1
            rounds += 1
            if speculative:
                drafted += run
                accepted += n_draft
            yield RoundEvent(request_id, drafter, run, run if speculative else 0, n_draft,
                             "speculating: drafts pay off here" if speculative else "speculation is off")
        elapsed = max(1e-6, time.monotonic() - started)
        stop = "cancelled" if cancel is not None and cancel.is_set() else "eos"
        text = "".join(pieces[:index])
        yield FinishedEvent(request_id, text, GenerationStats(
            tokens=index, tokens_per_second=index / elapsed, ttft_s=0.01, drafted=drafted, accepted=accepted,
            acceptance_rate=accepted / drafted if drafted else 0.0, rounds=rounds, stop_reason=stop,
            prompt_tokens=12, elapsed_s=elapsed,
        ))


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
