"""Errors the hub code raises, each with a message a person can act on (the UI and CLI show `str(error)` as is).

`hub_error_from` turns whatever huggingface_hub or its HTTP library raised into one of these, so callers catch
`HubError` and never need to know about httpx, status codes or huggingface_hub's exception zoo.
"""

from __future__ import annotations

from types import ModuleType
from typing import Optional

from app.common.http_client import is_network_error


class HubError(Exception):
    """Base for every error of app.hub. `str(error)` is a complete sentence for a person."""


class OfflineError(HubError):
    """The Hub cannot be reached: no network, DNS failure, firewall, or offline mode switched on."""


class HubUnavailableError(HubError):
    """The Hub answered, but with an error of its own (5xx, rate limit, unexpected status)."""


class NotFoundError(HubError):
    """The repository, revision or file does not exist (or is private and no token was given)."""

    def __init__(self, message: str, may_be_private: bool = False):
        super().__init__(message)
        # The Hub answers alike for a missing repo and a private one without access: a token might help.
        self.may_be_private = may_be_private


class AuthRequiredError(HubError):
    """The repository needs a Hugging Face access token, or the token given was refused."""

    def __init__(self, message: str, repo_id: Optional[str] = None):
        super().__init__(message)
        self.repo_id = repo_id


class GatedRepoError(AuthRequiredError):
    """The repository is gated: the person must accept its terms on the Hub and use a token."""


class InvalidTokenError(AuthRequiredError):
    """The saved or given token was rejected by the Hub."""


class DiskSpaceError(HubError):
    """Not enough free space for a download; raised before any byte is fetched."""

    def __init__(self, message: str, needed: int = 0, free: int = 0):
        super().__init__(message)
        self.needed = needed
        self.free = free


class VerificationError(HubError):
    """A downloaded file does not match the size or sha256 the Hub announced; the bad file is discarded."""


class DownloadCancelled(HubError):
    """The person cancelled. Partial files are kept so the next attempt resumes where this one stopped."""


class DestinationError(HubError):
    """The download cannot be written where asked (a different file already has that name, no permission...)."""


def hub_error_from(exc: BaseException, repo_id: Optional[str] = None, filename: Optional[str] = None) -> HubError:
    """The HubError that says to a person what `exc` (from huggingface_hub or HTTP) means."""
    if isinstance(exc, HubError):
        return exc
    what = f"{repo_id}/{filename}" if repo_id and filename else (repo_id or filename or "the request")
    hf_errors: Optional[ModuleType]
    try:
        from huggingface_hub import errors as hf_errors
    except ImportError:  # pragma: no cover - huggingface_hub is a dependency; keep the mapping usable without it
        hf_errors = None

    if hf_errors is not None:
        if isinstance(exc, hf_errors.OfflineModeIsEnabled):
            return OfflineError(
                "Hugging Face Hub access is switched off (HF_HUB_OFFLINE is set). Unset it to search and download; "
                "models already on this computer still work."
            )
        if isinstance(exc, hf_errors.GatedRepoError):
            return GatedRepoError(
                f"{repo_id or 'This repository'} is gated: accept its terms on the Hugging Face website, then add "
                "an access token (huggingface.co/settings/tokens) to download it.",
                repo_id,
            )
        if isinstance(exc, hf_errors.RepositoryNotFoundError):
            # The Hub answers the same for a missing repo and for a private one without a token.
            name = f"repository {repo_id}" if repo_id else "such repository"
            return NotFoundError(
                f"No {name} on the Hugging Face Hub. Check the name; if it is private, add an access token "
                "that can read it.",
                may_be_private=True,
            )
        if isinstance(exc, hf_errors.RevisionNotFoundError):
            return NotFoundError(f"{repo_id or 'The repository'} has no such branch, tag or commit.")
        if isinstance(exc, hf_errors.EntryNotFoundError):
            return NotFoundError(f"{what} does not exist on the Hugging Face Hub.")
        if isinstance(exc, hf_errors.DisabledRepoError):
            return NotFoundError(f"{repo_id or 'This repository'} has been disabled on the Hugging Face Hub.")
        if isinstance(exc, hf_errors.HFValidationError):
            return NotFoundError(f"{repo_id!r} is not a valid repository name (expected owner/name).")
        if isinstance(exc, hf_errors.HfHubHTTPError):
            return _from_status(exc, repo_id, what)

    if is_network_error(exc):
        return OfflineError(
            "Can't reach the Hugging Face Hub. Check your internet connection (or proxy) and try again; "
            "models already on this computer still work."
        )
    return HubError(f"Unexpected problem while talking to the Hugging Face Hub about {what}: {exc}")


def _from_status(exc: BaseException, repo_id: Optional[str], what: str) -> HubError:
    response = getattr(exc, "response", None)
    status = getattr(response, "status_code", None)
    if status == 401:
        return InvalidTokenError(
            "The Hugging Face Hub refused the access token. Create a new one at huggingface.co/settings/tokens "
            "and save it again.",
            repo_id,
        )
    if status == 403:
        return AuthRequiredError(
            f"Your access token is not allowed to read {repo_id or what}. If the repository is gated, accept its "
            "terms on the Hugging Face website; otherwise use a token with read access.",
            repo_id,
        )
    if status == 404:
        return NotFoundError(f"{what} does not exist on the Hugging Face Hub.")
    if status == 416:
        return HubUnavailableError(f"The Hub could not resume {what}; delete the partial file and try again.")
    if status == 429:
        return HubUnavailableError("The Hugging Face Hub is rate-limiting requests; wait a minute and try again.")
    if status is not None and status >= 500:
        return HubUnavailableError(f"The Hugging Face Hub has a problem right now (HTTP {status}); try again later.")
    return HubUnavailableError(f"The Hugging Face Hub answered HTTP {status} for {what}.")
