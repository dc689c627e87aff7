"""Where the Hugging Face Hub is and where huggingface_hub keeps its files, read from the environment at call time.

huggingface_hub reads HF_ENDPOINT, HF_HOME and friends once, when it is first imported. We read them on every call
and pass them explicitly (endpoint=, token=, cache_dir=), so a change of environment (tests, a settings dialog)
takes effect without re-importing the library. The rules mirror huggingface_hub.constants.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import ModuleType

from app.hub.errors import HubError, OfflineError

DEFAULT_ENDPOINT = "https://huggingface.co"
LIBRARY_NAME = "specchat"  # how we introduce ourselves to the Hub, in the User-Agent

_TRUE = {"1", "on", "yes", "true"}

# endpoint -> monotonic time of the last successful probe (see ensure_reachable)
_reachable_at: dict[str, float] = {}
_REACHABLE_TTL_S = 60.0


def import_huggingface_hub() -> ModuleType:
    """huggingface_hub, or a HubError that says how to get it (it is optional for the rest of the app)."""
    try:
        import huggingface_hub
    except ImportError as exc:
        raise HubError(
            "Searching and downloading models needs the huggingface_hub package: pip install huggingface_hub"
        ) from exc
    return huggingface_hub


def library_info() -> dict[str, str]:
    """library_name= and library_version= for huggingface_hub calls."""
    from app import __version__

    return {"library_name": LIBRARY_NAME, "library_version": __version__}


def endpoint() -> str:
    """The Hub's base URL: HF_ENDPOINT when set (a mirror, or the tests' local server), else huggingface.co."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")


def offline_requested() -> bool:
    """True when the person switched the Hub off (HF_HUB_OFFLINE, as huggingface_hub understands it)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    return value.strip().lower() in _TRUE


def hf_home() -> Path:
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg).expanduser() if xdg else Path.home() / ".cache"
    return base / "huggingface"


def hub_cache_dir() -> Path:
    """huggingface_hub's download cache (models--owner--name/ folders), honouring HF_HUB_CACHE and HF_HOME."""
    for name in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(name):
            return Path(os.environ[name]).expanduser()
    return hf_home() / "hub"


def token_file() -> Path:
    """The file where huggingface_hub (and `hf auth login`) keep the active access token."""
    if os.environ.get("HF_TOKEN_PATH"):
        return Path(os.environ["HF_TOKEN_PATH"]).expanduser()
    return hf_home() / "token"


def ensure_online() -> None:
    """Raise OfflineError at once when offline mode is on, rather than after huggingface_hub's retries."""
    if offline_requested():
        raise OfflineError(
            "Hugging Face Hub access is switched off (HF_HUB_OFFLINE is set). Unset it to search and download; "
            "models already on this computer still work."
        )


def ensure_reachable(base_url: str, timeout_s: float = 5.0) -> None:
    """One quick request to the Hub before real work, so "no network" is said in seconds.

    huggingface_hub retries network errors with exponential backoff (about 30 s in all), which is right for a
    flaky connection but far too slow to tell a person they are offline. Any HTTP answer, even an error status,
    proves the Hub is reachable; a success is remembered for a minute.
    """
    ensure_online()
    last = _reachable_at.get(base_url)
    if last is not None and time.monotonic() - last < _REACHABLE_TTL_S:
        return
    hf = import_huggingface_hub()
    try:
        hf.get_session().request("HEAD", base_url + "/", timeout=timeout_s, follow_redirects=False)
    except Exception as exc:
        from app.hub.errors import hub_error_from

        raise hub_error_from(exc) from exc
    _reachable_at[base_url] = time.monotonic()


def forget_reachability() -> None:
    """Probe again on the next call (after a network error, the Hub may be back or gone)."""
    _reachable_at.clear()
