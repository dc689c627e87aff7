"""What a load asks for: a model file here (LocalModel) or a model on an OpenAI-compatible server (ServerModel).

The store, the settings and the library keep a target as one string, its key: a file's path, or
"server:<base URL>#<model id>" for a server's model. `target_of` reads a key back; everything that crosses into the
engine (the wire, the engine builders) carries the typed record, so no code below the window tests a prefix.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

SERVER_PREFIX = "server:"


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file loaded in the engine process. Path-like, so file APIs take it as they take its path."""

    path: Path

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return os.fspath(self.path)


@dataclass(frozen=True)
class ServerModel:
    """`model` as the server at `url` (its base URL, no trailing /v1) lists it in /v1/models."""

    url: str
    model: str

    @property
    def key(self) -> str:
        return f"{SERVER_PREFIX}{self.url}#{self.model}"

    def __str__(self) -> str:
        return self.key


Target = Union[LocalModel, ServerModel]


def server_model_of(target: object) -> Optional[ServerModel]:
    """The ServerModel a target or a key names, None for anything else (a file)."""
    if isinstance(target, ServerModel):
        return target
    text = str(target) if isinstance(target, (str, Path)) else ""
    if not text.startswith(SERVER_PREFIX) or "#" not in text:
        return None
    url, _, model = text[len(SERVER_PREFIX):].partition("#")
    return ServerModel(url, model) if url and model else None


def target_of(key: str | Path | Target) -> Target:
    """The typed target a stored key names (a target passes through)."""
    if isinstance(key, (LocalModel, ServerModel)):
        return key
    return server_model_of(key) or LocalModel(Path(key))
