"""ChatEngine: what the engine process drives, whichever engine it holds (SpecEngine, or the tests' scripted one).

The window never holds an engine: it talks to the engine process (app.ui.engine_link.engine_process), whose loop
(app.engine.host.worker) calls exactly these members, so a stand-in that implements them behaves as the real
engine does at that boundary. The window, the CLI and the benchmarks all ask for a reply the same way: `reply()`,
which every engine implements with `fitted_reply` below.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator, Optional, Protocol, Sequence

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import ContextEvent, EngineEvent, NoticeEvent
from app.engine.targets import Target
from app.engine.tools.calls import ToolFormat

# A chat message as chat templates and servers take it: {"role": "system" | "user" | "assistant", "content": str}.
Message = dict[str, Any]


class CancelSignal(Protocol):
    """Set from another thread (or process) to stop a reply at its next round."""

    def is_set(self) -> bool: ...


class ChatEngine(Protocol):
    """Owns the models. Every member is called from one thread; only `cancel.is_set()` is read across threads."""

    @property
    def loaded_target(self) -> Optional[Target]:
        """The loaded target (a file or a server's model), None while none is."""

    @property
    def draft_path(self) -> Optional[Path]: ...

    @property
    def placement_note(self) -> str:
        """Where the models run, in words for a person ("" before a load)."""

    @property
    def template_notice(self) -> str:
        """After count_tokens/chat: why the model's chat template was not used ("" when it was). Read by
        fitted_reply, which puts it in the reply's stream; nothing else needs it."""

    @property
    def tool_format(self) -> ToolFormat:
        """How the loaded model writes a tool call (its chat template shows which; app.engine.tools reads it)."""

    @property
    def n_ctx(self) -> int: ...

    def load_target(self, target: Target, planned_draft: str | Path | None = None) -> None:
        """Load the target; `planned_draft` is the draft loaded next (GPU placement leaves room for it first)."""

    def load_draft(self, path: str | Path | None) -> None: ...

    def unload(self) -> None: ...

    def reconfigure(self, load: LoadSettings) -> None: ...

    def idle_step(self) -> bool:
        """One short piece of background work between requests (such as timing a forward pass); False when there
        is none to do now."""

    @property
    def parallel(self) -> int:
        """Requests answered side by side; with more than 1, a reply's events may be WaitingEvent until `step`."""

    def step(self) -> bool:
        """One forward pass over every reply answered side by side; False when none waits for one."""

    def count_tokens(self, messages: Sequence[Message], config: Optional[GenerationConfig] = None) -> int:
        """The prompt's tokens as `config` would render it (its tools' schema, its format); None: the plain chat."""

    def fit_messages(
        self, messages: Sequence[Message], reserve_tokens: int, session: str = "default"
    ) -> tuple[list[Message], int]: ...

    def chat(
        self,
        messages: Sequence[Message],
        config: GenerationConfig = ...,
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
    ) -> Iterator[EngineEvent]:
        """The reply to exactly `messages` (no fitting): what reply() calls once the prompt fits."""

    def completion_tokens(self, prompt: str | Sequence[int], suffix: Optional[str] = None) -> list[int]:
        """A raw completion's prompt as tokens (fill-in-the-middle with a `suffix`). Raises PromptFormatError where
        the engine cannot build it (a suffix on a model without FIM tokens, a server's model)."""

    def complete(
        self,
        prompt: str | Sequence[int],
        config: GenerationConfig = ...,
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
    ) -> Iterator[EngineEvent]:
        """Continue raw text, or completion_tokens' tokens, with no chat template (the API's /v1/completions)."""

    def reply(
        self,
        messages: Sequence[Message],
        config: GenerationConfig,
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
    ) -> Iterator[EngineEvent]:
        """The one way to ask for a reply: a ContextEvent, a NoticeEvent if there is something to say, then the
        reply's tokens, rounds and finish. Engines implement it as `return fitted_reply(self, ...)`."""

    def close(self) -> None: ...


def reply_reserve(config: GenerationConfig, n_ctx: int) -> int:
    """Tokens kept free for the reply when fitting the prompt: what it may write, at most half the context."""
    return max(16, min(config.max_tokens, n_ctx // 2))


def fitted_reply(
    engine: ChatEngine,
    messages: Sequence[Message],
    config: GenerationConfig,
    *,
    cancel: Optional[CancelSignal] = None,
    request_id: int = 0,
) -> Iterator[EngineEvent]:
    """Fit `messages` to the context (earlier turns dropped per chat session), say so, then stream the reply."""
    kept, dropped = engine.fit_messages(messages, reply_reserve(config, engine.n_ctx), session=config.session)
    prompt_tokens = engine.count_tokens(kept, config)  # as it is read: the tools' schema included
    if engine.template_notice:
        yield NoticeEvent(request_id, engine.template_notice)
    yield ContextEvent(request_id, dropped, prompt_tokens, engine.n_ctx)
    yield from engine.chat(kept, config, cancel=cancel, request_id=request_id)
