"""The engine the engine process holds: local models (SpecEngine) or a server's (RemoteEngine), by the target.

A target is a LocalModel or a ServerModel (app.engine.targets). DispatchingEngine
keeps one engine of each kind at most, made when first needed, and sends every ChatEngine call to the one whose
kind the current target is; loading a target of the other kind unloads the first (its memory is freed).
`local_engine` and `server_engine` build one loaded engine of each kind for the CLI and the benchmarks.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Optional, Sequence

from app.engine.config import GenerationConfig, LoadSettings
from app.engine.events import EngineEvent
from app.engine.image_files import ImageInput
from app.engine.protocol import CancelSignal, ChatEngine, fitted_reply
from app.engine.tools.calls import ToolFormat
from app.engine.targets import LocalModel, ServerModel, Target

if TYPE_CHECKING:
    from app.engine.local.engine import SpecEngine
    from app.engine.speculation.history_file import HistoryFile
    from app.engine.remote.engine import RemoteEngine


def _local_engine(load: LoadSettings) -> ChatEngine:
    from app.engine.local.engine import SpecEngine

    return SpecEngine(load)


def _remote_engine(load: LoadSettings) -> ChatEngine:
    from app.engine.remote.engine import RemoteEngine

    return RemoteEngine(load)


def local_engine(
    target: LocalModel,
    draft: Optional[Path] = None,
    load: LoadSettings = LoadSettings(),
    history_file: Optional[HistoryFile] = None,
) -> SpecEngine:
    """A SpecEngine with `target` (and `draft`, if any) loaded. `history_file`: the history drafter's file (the
    data folder's by default). Raises EngineError."""
    from app.engine.local.engine import SpecEngine

    engine = SpecEngine(load, history_file=history_file)
    try:
        engine.load_target(target, planned_draft=draft)
        if draft is not None:
            engine.load_draft(draft)
    except BaseException:
        engine.close()
        raise
    return engine


def server_engine(
    target: ServerModel, load: LoadSettings = LoadSettings(), api_key: Optional[str] = None
) -> RemoteEngine:
    """A RemoteEngine for `target`, checked on its server with `api_key`. Raises EngineError."""
    from app.engine.remote.engine import RemoteEngine

    engine = RemoteEngine(load, api_key_for=lambda url: api_key)
    engine.load_target(target)
    return engine


class DispatchingEngine:
    """A ChatEngine that is a SpecEngine for file targets and a RemoteEngine for server targets."""

    def __init__(
        self,
        load: LoadSettings = LoadSettings(),
        local_factory: Callable[[LoadSettings], ChatEngine] = _local_engine,
        remote_factory: Callable[[LoadSettings], ChatEngine] = _remote_engine,
    ):
        self._load = load
        self._factories = {False: local_factory, True: remote_factory}
        self._engines: dict[bool, ChatEngine] = {}
        self._remote = False  # the kind of the current target

    def _engine(self, remote: bool) -> ChatEngine:
        if remote not in self._engines:
            self._engines[remote] = self._factories[remote](self._load)
        return self._engines[remote]

    @property
    def active(self) -> ChatEngine:
        return self._engine(self._remote)

    # -- the target decides the kind ----------------------------------------------------------------------------

    def load_target(self, target: Target, planned_draft: str | Path | None = None) -> None:
        remote = isinstance(target, ServerModel)
        other = self._engines.get(not remote)
        if other is not None:
            other.unload()
        self._remote = remote
        self.active.load_target(target, planned_draft=planned_draft)

    def load_draft(self, path) -> None:
        self.active.load_draft(path)

    def load_projector(self, path: Optional[Path]) -> None:
        """The local target's projector (its mmproj), so it reads pictures; a server's model has none here."""
        load = getattr(self.active, "load_projector", None)
        if load is not None:
            load(path)

    def offer_projector(self, path: Optional[Path]) -> None:
        """The local target's projector chosen in its settings (None: the one beside it), loaded at its first
        picture; a server's model has none here."""
        offer = getattr(self.active, "offer_projector", None)
        if offer is not None:
            offer(path)

    @property
    def projector_path(self) -> Optional[Path]:
        return getattr(self.active, "projector_path", None)

    def picture_tokens(self, image: ImageInput) -> Optional[int]:
        """The exact tokens `image` takes with the local target's projector; None for a server's model (its
        tokenizer is not at hand) or a model that cannot see."""
        count = getattr(self.active, "picture_tokens", None)
        return count(image) if count is not None else None

    @property
    def offered_projector(self) -> Optional[Path]:
        return getattr(self.active, "offered_projector", None)

    def unload(self) -> None:
        for engine in self._engines.values():
            engine.unload()

    def reconfigure(self, load: LoadSettings) -> None:
        self._load = load
        for engine in self._engines.values():
            engine.reconfigure(load)

    def close(self) -> None:
        for engine in self._engines.values():
            engine.close()
        self._engines.clear()

    # -- everything else goes to the current kind ---------------------------------------------------------------

    @property
    def loaded_target(self) -> Optional[Target]:
        return self.active.loaded_target

    @property
    def draft_path(self) -> Optional[Path]:
        return self.active.draft_path

    @property
    def placement_note(self) -> str:
        return self.active.placement_note

    @property
    def template_notice(self) -> str:
        return self.active.template_notice

    @property
    def tool_format(self) -> ToolFormat:
        return self.active.tool_format

    @property
    def n_ctx(self) -> int:
        return self.active.n_ctx

    def idle_step(self) -> bool:
        return self.active.idle_step()

    @property
    def parallel(self) -> int:
        return self.active.parallel

    def step(self) -> bool:
        return self.active.step()

    def count_tokens(self, messages: Sequence[dict], config: Optional[GenerationConfig] = None) -> int:
        return self.active.count_tokens(messages, config)

    def fit_messages(
        self, messages: Sequence[dict], reserve_tokens: int, session: str = "default"
    ) -> tuple[list[dict], int]:
        return self.active.fit_messages(messages, reserve_tokens, session=session)

    def chat(
        self,
        messages: Sequence[dict],
        config: GenerationConfig = GenerationConfig(),
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
    ) -> Iterator[EngineEvent]:
        return self.active.chat(messages, config, cancel=cancel, request_id=request_id)

    def completion_tokens(self, prompt: str | Sequence[int], suffix: Optional[str] = None) -> list[int]:
        return self.active.completion_tokens(prompt, suffix)

    def complete(
        self,
        prompt: str | Sequence[int],
        config: GenerationConfig = GenerationConfig(),
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
    ) -> Iterator[EngineEvent]:
        return self.active.complete(prompt, config, cancel=cancel, request_id=request_id)

    def reply(
        self,
        messages: Sequence[dict],
        config: GenerationConfig,
        *,
        cancel: Optional[CancelSignal] = None,
        request_id: int = 0,
    ) -> Iterator[EngineEvent]:
        return fitted_reply(self, messages, config, cancel=cancel, request_id=request_id)
