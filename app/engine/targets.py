"""What a load asks for: a model file here (LocalModel) or a model on an OpenAI-compatible server (ServerModel).

From the model picker to the loaded engine a target is one of these records. Only the store, the settings and the
library's rows keep it as a string, its `key` (a file's path, or "server:<base URL>#<model id>" for a server's
model); `target_from_key` reads a key back, once, where it comes off disk.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union
from urllib.parse import urlsplit

SERVER_PREFIX = "server:"


def normalize_url(url: str) -> str:
    """The server's base URL without a trailing slash or a trailing /v1 ("http://host:8080")."""
    url = url.strip().rstrip("/")
    if url.endswith("/v1"):
        url = url[: -len("/v1")]
    if "://" not in url:
        url = "http://" + url
    return url


def server_url_problem(url: str) -> Optional[str]:
    """Why `url` (normalized) cannot be a server's address, in a sentence; None when it can be one."""
    try:
        parts = urlsplit(url)
        _port = parts.port  # raises ValueError for a port that is not a number in range
    except ValueError:
        return f"{url} is not a server address: its port is not a number from 1 to 65535."
    if parts.scheme not in ("http", "https"):
        return f"{url} is not a server address: it must start with http:// or https://."
    if not parts.hostname or any(c.isspace() for c in parts.netloc):
        return f"{url} is not a server address: it names no host (e.g. http://gpu-box:8080)."
    return None


@dataclass(frozen=True)
class LocalModel:
    """A GGUF file loaded in the engine process. Path-like, so file APIs take it as they take its path."""

    path: Path

    @property
    def key(self) -> str:
        return os.fspath(self.path)

    def __fspath__(self) -> str:
        return os.fspath(self.path)

    def __str__(self) -> str:
        return os.fspath(self.path)


@dataclass(frozen=True)
class ServerModel:
    """`model` as the server at `url` (its base URL, no trailing /v1) lists it in /v1/models."""

    url: str
    model: str

    @classmethod
    def at(cls, url: str, model: str) -> ServerModel:
        """`model` on the server at `url` as a user may write it (a trailing / or /v1, no scheme)."""
        return cls(normalize_url(url), model)

    @property
    def key(self) -> str:
        return f"{SERVER_PREFIX}{self.url}#{self.model}"

    def __str__(self) -> str:
        return self.key


Target = Union[LocalModel, ServerModel]


def target_from_key(key: str | Path) -> Target:
    """The typed target a stored key names: a server's model for "server:<url>#<model>", else a file."""
    text = os.fspath(key)
    if text.startswith(SERVER_PREFIX) and "#" in text:
        url, _, model = text[len(SERVER_PREFIX) :].partition("#")
        if url and model:
            return ServerModel(url, model)
    return LocalModel(Path(text))
