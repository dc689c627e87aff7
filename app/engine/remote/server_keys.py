"""API keys of remote servers, kept like the Hugging Face token: one owner-only file, never logged.

The file maps a server's base URL to its key, and a key goes only to the server it was saved for. SPECCHAT_API_KEY
in the environment is the CLI's way to pass a key without writing it to disk or to the shell history: it applies
to the --server URL given with it, never to other servers (the window does not read it).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional

from app.common.bounded_read import FileReadError, read_text_bounded
from app.engine.remote.http import normalize_url
from app.platform import paths
from app.platform.secret_file import clean_secret, write_secret

ENV_VAR = "SPECCHAT_API_KEY"
# A key is a line; a file far larger is not a key file.
MAX_KEY_FILE_BYTES = 64 << 10


def keys_file() -> Path:
    return paths.user_config_dir() / "server-keys.json"


def _saved() -> dict[str, str]:
    try:
        data = json.loads(keys_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def api_key_for(url: str) -> Optional[str]:
    """The key saved for the server at `url`, or None."""
    return clean_secret(_saved().get(normalize_url(url)))


def env_api_key() -> Optional[str]:
    """SPECCHAT_API_KEY, for the one server URL the CLI was given with it."""
    return clean_secret(os.environ.get(ENV_VAR))


def save_api_key(url: str, key: Optional[str]) -> None:
    """Keep `key` for the server at `url`; an empty key forgets it. Raises OSError."""
    keys = _saved()
    key = clean_secret(key)
    if key:
        keys[normalize_url(url)] = key
    else:
        keys.pop(normalize_url(url), None)
    write_secret(keys_file(), json.dumps(keys, indent=1))


def read_key_file(path: str) -> str:
    """The key in a file given on the command line (its first line). Raises ValueError with a sentence."""
    try:
        text = read_text_bounded(path, MAX_KEY_FILE_BYTES)
    except FileReadError as exc:
        raise ValueError(f"cannot use the API key file: {exc}") from None
    key = clean_secret(text.splitlines()[0] if text.strip() else "")
    if not key:
        raise ValueError(f"the API key file {path} is empty")
    return key
