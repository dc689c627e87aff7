"""The Hugging Face access token, kept where huggingface_hub keeps it ($HF_HOME/token, as `hf auth login` does).

So a person already logged in with the `hf` CLI needs nothing more, and a token saved here works for their other
tools too. The HF_TOKEN environment variable wins over the file, as in huggingface_hub. The token is a secret: it
is never logged, never put in an exception message, and the file is readable by its owner only.

Any thread may call these functions; save_token and validate_token make a network request.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

from app.hub import environment
from app.hub.errors import HubError, InvalidTokenError, hub_error_from
from app.platform.secret_file import clean_secret, write_secret


def get_token() -> Optional[str]:
    """The token to use: HF_TOKEN (or HUGGING_FACE_HUB_TOKEN) from the environment, else the saved one."""
    from_env = clean_secret(os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN"))
    if from_env:
        return from_env
    try:
        return clean_secret(environment.token_file().read_text(encoding="utf-8"))
    except OSError:
        return None


def token_source() -> Optional[str]:
    """Where the token comes from, for a label in Settings: "environment", "file" or None."""
    if clean_secret(os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")):
        return "environment"
    return "file" if get_token() else None


def request_token(explicit: Optional[str] = None) -> Union[str, bool]:
    """What to pass as huggingface_hub's `token=`: a string, or False so it never looks one up on its own."""
    return clean_secret(explicit) or get_token() or False


def validate_token(token: str, base_url: Optional[str] = None) -> str:
    """The Hub user name the token belongs to; InvalidTokenError when the Hub refuses it."""
    token = clean_secret(token) or ""
    if not token:
        raise InvalidTokenError("The access token is empty. Paste a token from huggingface.co/settings/tokens.")
    if token.startswith("api_org"):
        raise InvalidTokenError("That is an organization token; use a personal access token instead.")
    hf = environment.import_huggingface_hub()
    base_url = base_url or environment.endpoint()
    environment.ensure_reachable(base_url)
    try:
        info = hf.HfApi(endpoint=base_url, **environment.library_info()).whoami(token=token)
    except Exception as exc:
        error = hub_error_from(exc)
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status in (401, 403) or isinstance(error, InvalidTokenError):
            raise InvalidTokenError(
                "The Hugging Face Hub refused this access token. Check it was copied whole, or create a new one "
                "at huggingface.co/settings/tokens."
            ) from None  # `from None`: the original exception's request headers carry the token
        raise error from None
    return str(info.get("name") or "")


def save_token(token: str, *, validate: bool = True, base_url: Optional[str] = None) -> str:
    """Store the token for this and every huggingface_hub tool; returns the user name ("" when not validated)."""
    token = clean_secret(token) or ""
    user = validate_token(token, base_url) if validate else ""
    if not token:
        raise InvalidTokenError("The access token is empty. Paste a token from huggingface.co/settings/tokens.")
    _write_secret(environment.token_file(), token)
    return user


def forget_token() -> None:
    """Remove the saved token (HF_TOKEN in the environment, if set, still applies)."""
    try:
        environment.token_file().unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise HubError(f"Could not remove the saved token file: {exc.strerror}") from None


def _write_secret(path: Path, content: str) -> None:
    """Write the token the way huggingface_hub writes its token file: atomically, owner-only."""
    try:
        write_secret(path, content)
    except OSError as exc:
        raise HubError(f"Could not save the access token in {path.parent}: {exc.strerror}") from None
