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
from app.engine.remote.http import is_loopback_url, normalize_url
from app.engine.remote.server_errors import display_url
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


def key_for_server(url: str, key_file: Optional[str] = None) -> Optional[str]:
    """The key a client sends to `url`: the `key_file`'s, else SPECCHAT_API_KEY (over https or to this machine
    only), else the key saved for that URL in the window. Each goes to that URL only (the client follows no
    redirect). Raises ValueError for an unreadable key file."""
    if key_file:
        return read_key_file(key_file)
    env_key = env_api_key()
    if env_key and not plain_http_elsewhere(url):
        return env_key
    return api_key_for(url)


def env_key_warning(url: str, key_file: Optional[str] = None) -> Optional[str]:
    """A warning when SPECCHAT_API_KEY is held back (plain http to another machine: a key set in the environment
    is never sent where anyone on the network between could read it), or goes to a server on another machine that
    SPECCHAT_API_KEY_SERVER does not name: a key set for one server should not travel silently to whatever URL a
    command names."""
    if key_file or not env_api_key() or is_loopback_url(normalize_url(url)):
        return None
    shown = display_url(normalize_url(url))
    if plain_http_elsewhere(url):
        return (
            f"warning: {ENV_VAR} is not sent to {shown}: over plain http to another machine anyone on "
            "the network between could read it; use https://, or --api-key-file to send a key anyway"
        )
    meant_for = os.environ.get(f"{ENV_VAR}_SERVER", "").strip()
    if meant_for and normalize_url(meant_for) == normalize_url(url):
        return None
    return (
        f"warning: {ENV_VAR} is sent to {shown}; set {ENV_VAR}_SERVER to the one server it is "
        "for (then this warning stops), or use --api-key-file"
    )


def plain_http_elsewhere(url: str) -> bool:
    """Whether `url` is plain http to a host other than this machine."""
    url = normalize_url(url)
    return url.lower().startswith("http://") and not is_loopback_url(url)


def plain_http_warning(url: str) -> Optional[str]:
    """A warning when a key would cross the network unencrypted: plain http to a host other than this machine."""
    if plain_http_elsewhere(url):
        return (
            f"warning: the API key is sent to {display_url(normalize_url(url))} over plain http, readable by "
            "anyone on the network between; use https:// for a server on another machine"
        )
    return None
