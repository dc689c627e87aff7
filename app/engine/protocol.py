"""ChatEngine: what the engine process drives, whichever engine it holds (SpecEngine, or the tests' scripted one).

The window never holds an engine: it talks to the engine process (app.ui.engine_link.engine_process), whose loop
(app.engine.host.worker) calls exactly these members, so a stand-in that implements them behaves as the real
engine does at that boundary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator, Optional, Protocol, Sequence

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import EngineEvent


class ChatEngine(Protocol):
    """Owns the models. Every member is called from one thread; only `cancel.is_set()` is read across threads."""

    @property
    def target_path(self) -> Optional[Path | str]:
        """The loaded target: a file path, or a server model's target key (app.engine.remote.engine)."""

    @property
    def draft_path(self) -> Optional[Path]: ...

    @property
    def placement_note(self) -> str:
        """Where the models run, in words for a person ("" before a load)."""

    @property
    def template_notice(self) -> str:
        """After count_tokens/chat: why the model's chat template was not used ("" when it was)."""

    @property
    def n_ctx(self) -> int: ...

    def load_target(self, path: str | Path, planned_draft: str | Path | None = None) -> None:
        """Load the target; `planned_draft` is the draft loaded next (GPU placement leaves room for it first)."""

    def load_draft(self, path: str | Path | None) -> None: ...

    def unload(self) -> None: ...

    def reconfigure(self, load: LoadSettings) -> None: ...

    def idle_step(self) -> bool:
        """One short piece of background work between requests (such as timing a forward pass); False when there
        is none to do now."""

    def count_tokens(self, messages: Sequence[dict]) -> int: ...

    def fit_messages(self, messages: Sequence[dict], reserve_tokens: int,
                     session: str = "default") -> tuple[list[dict], int]: ...

    def chat(self, messages: Sequence[dict], config: GenerationConfig = ..., *, cancel=None,
             request_id: int = 0) -> Iterator[EngineEvent]: ...

    def close(self) -> None: ...
