"""Search the Hugging Face Hub for GGUF repositories and list a repository's GGUF files, via huggingface_hub.

Every call blocks on the network: run it off the GUI thread. Any thread may use a HubClient; it keeps no state
beyond its settings (huggingface_hub shares one HTTP session between threads).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Optional, Sequence, Union

from app.hub import environment, token as hub_token
from app.hub.errors import NotFoundError, hub_error_from
from app.hub.repo_files import QuantGroup, RemoteFile, RemoteModel, group_gguf_files

SEARCH_LIMIT = 40


@dataclass(frozen=True)
class RepoSummary:
    """One search result."""

    repo_id: str
    downloads: int = 0
    likes: int = 0
    gated: bool = False  # the person must accept terms on the Hub and use a token
    private: bool = False
    last_modified: Optional[datetime] = None
    tags: tuple[str, ...] = ()


@dataclass(frozen=True)
class RepoListing:
    """A repository's GGUF models grouped by quantization, at the commit the listing was read from."""

    repo_id: str
    revision: str
    groups: tuple[QuantGroup, ...]
    files: tuple[RemoteFile, ...] = field(default=(), repr=False)  # every file, GGUF or not

    @property
    def model_groups(self) -> tuple[QuantGroup, ...]:
        """The groups of chat models, without the projectors: those come with a model (app.hub.repo_projector)."""
        return tuple(group for group in self.groups if not group.models[0].is_projector)

    @property
    def projectors(self) -> tuple[RemoteModel, ...]:
        """The repository's picture projectors (mmproj-*.gguf), if it holds a vision model."""
        return tuple(m for group in self.groups for m in group.models if m.is_projector)

    @property
    def model_count(self) -> int:
        return sum(len(group.models) for group in self.model_groups)


class HubClient:
    """The Hub as SpecChat uses it. `base_url` defaults to HF_ENDPOINT; `token` to the saved token, if any.

    Blocking; call from a worker thread. Any thread may call it.
    """

    def __init__(self, base_url: Optional[str] = None, token: Optional[str] = None):
        self.base_url = (base_url or environment.endpoint()).rstrip("/")
        self._explicit_token = token

    def __repr__(self) -> str:  # never show the token
        return f"HubClient({self.base_url!r})"

    def request_token(self) -> Union[str, bool]:
        """The token= value for huggingface_hub: read at each call, so a token saved meanwhile is used at once."""
        return hub_token.request_token(self._explicit_token)

    def api(self):
        """A huggingface_hub HfApi bound to this client's endpoint and token."""
        hf = environment.import_huggingface_hub()
        return hf.HfApi(endpoint=self.base_url, token=self.request_token(), **environment.library_info())

    def check_reachable(self) -> None:
        """OfflineError in a few seconds when the Hub cannot be reached."""
        environment.ensure_reachable(self.base_url)

    def search_gguf(self, query: str, limit: int = SEARCH_LIMIT, sort: str = "downloads") -> list[RepoSummary]:
        """Model repositories with GGUF files whose name matches `query`, most downloaded first."""
        self.check_reachable()
        try:
            infos = self.api().list_models(
                search=query.strip() or None,
                filter="gguf",
                sort=sort,
                limit=limit,
                expand=["downloads", "likes", "gated", "private", "lastModified", "tags"],
            )
            return [_summary(info) for info in infos]
        except Exception as exc:
            environment.forget_reachability()
            raise hub_error_from(exc) from exc

    def list_files(self, repo_id: str, revision: Optional[str] = None) -> list[RemoteFile]:
        """Every file of a repository, with sizes and (for LFS files) sha256."""
        self.check_reachable()
        try:
            entries = self.api().list_repo_tree(repo_id, recursive=True, revision=revision)
            return [_remote_file(entry) for entry in entries if hasattr(entry, "size")]
        except Exception as exc:
            raise hub_error_from(exc, repo_id) from exc

    def list_gguf(self, repo_id: str, revision: Optional[str] = None) -> RepoListing:
        """A repository's GGUF files as models grouped by quantization; NotFoundError when it has none."""
        files = self.list_files(repo_id, revision)
        groups = group_gguf_files(files)
        if not groups:
            raise NotFoundError(f"{repo_id} has no GGUF files. SpecChat runs GGUF models only.")
        return RepoListing(repo_id, revision or "main", tuple(groups), tuple(files))

    def file_details(self, repo_id: str, paths: Sequence[str], revision: Optional[str] = None) -> list[RemoteFile]:
        """Size and sha256 of the given files, in the given order; NotFoundError names any missing one."""
        self.check_reachable()
        try:
            entries = self.api().get_paths_info(repo_id, list(paths), revision=revision)
        except Exception as exc:
            raise hub_error_from(exc, repo_id) from exc
        by_path = {entry.path: _remote_file(entry) for entry in entries if hasattr(entry, "size")}
        missing = [p for p in paths if p not in by_path]
        if missing:
            raise NotFoundError(
                f"{repo_id} has no file {missing[0]}"
                + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
                + ". It may have been renamed; search the repository to see what it offers."
            )
        return [by_path[p] for p in paths]


def _summary(info) -> RepoSummary:
    tags = tuple(getattr(info, "tags", None) or ())
    return RepoSummary(
        repo_id=info.id,
        downloads=int(getattr(info, "downloads", None) or 0),
        likes=int(getattr(info, "likes", None) or 0),
        # The Hub says gated=False, "auto" or "manual".
        gated=bool(getattr(info, "gated", None)),
        private=bool(getattr(info, "private", None)),
        last_modified=getattr(info, "last_modified", None),
        tags=tags,
    )


def _remote_file(entry) -> RemoteFile:
    lfs = getattr(entry, "lfs", None)
    sha256 = None
    if lfs is not None:
        sha256 = lfs.get("sha256") if isinstance(lfs, dict) else getattr(lfs, "sha256", None)
    size = getattr(entry, "size", None)
    if lfs is not None and not size:
        size = lfs.get("size") if isinstance(lfs, dict) else getattr(lfs, "size", None)
    return RemoteFile(path=entry.path, size=size, sha256=sha256)
