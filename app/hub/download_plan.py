"""What a download will do before it fetches a byte: exact sizes and checksums, where each file lands, what is
already there (whole, or partly from an interrupted attempt), and whether the disk can hold the rest.

Files land as plain .gguf files, side by side in the destination folder (split parts together), so llama.cpp
and the library see them directly; a vision model's projector lands under a name that pairs it with its model. While downloading, a file is `name.gguf.part`, with `name.gguf.part.json`
beside it recording which Hub file (commit, size, sha256) the partial bytes belong to: a later attempt resumes
only a partial file of the very same content, and starts over otherwise.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional

from app.common.atomic_write import write_atomic
from app.hub.errors import DestinationError, DiskSpaceError
from app.common.units import format_bytes

PART_SUFFIX = ".part"
STATE_SUFFIX = ".part.json"
# Room left free after a download, so the disk is not filled to the last byte (logs, settings, the OS...).
DISK_MARGIN_BYTES = 64 * 1024**2

_SHA256_RE = re.compile(r"^[0-9a-f]{64}$")


@dataclass(frozen=True)
class DownloadItem:
    """A file to fetch: a path inside a Hub repository, saved in the folder under its own name or `save_as`."""

    repo_id: str
    path: str
    revision: Optional[str] = None  # branch, tag or commit; None is the main branch
    # The name in the folder, where the published one would not do: a projector published as a generic
    # mmproj-model-f16.gguf is saved under a name that pairs it with its model (app.engine.gguf.mmproj.name_beside).
    save_as: Optional[str] = None

    @property
    def name(self) -> str:
        return self.save_as or self.path.rsplit("/", 1)[-1]


@dataclass(frozen=True)
class PlannedFile:
    """One file of a plan: where it lands and how much of it is still to fetch."""

    item: DownloadItem
    dest: Path
    size: Optional[int]
    sha256: Optional[str]
    commit: Optional[str]  # the commit the bytes come from, so a resumed file never mixes two versions
    resume_from: int = 0  # bytes of a matching partial file already on disk
    already_done: bool = False  # the finished file is already in place

    @property
    def part_path(self) -> Path:
        return self.dest.with_name(self.dest.name + PART_SUFFIX)

    @property
    def state_path(self) -> Path:
        return self.dest.with_name(self.dest.name + STATE_SUFFIX)

    @property
    def remaining(self) -> int:
        if self.already_done:
            return 0
        return max(0, (self.size or 0) - self.resume_from)


@dataclass(frozen=True)
class DownloadPlan:
    dest_dir: Path
    files: tuple[PlannedFile, ...]
    free_bytes: int

    @property
    def total_bytes(self) -> int:
        return sum(f.size or 0 for f in self.files)

    @property
    def remaining_bytes(self) -> int:
        return sum(f.remaining for f in self.files)

    @property
    def done_bytes(self) -> int:
        return self.total_bytes - self.remaining_bytes


@dataclass(frozen=True)
class PartialState:
    """What `name.gguf.part.json` records about the partial bytes beside it."""

    repo_id: str
    path: str
    commit: Optional[str]
    size: Optional[int]
    sha256: Optional[str]


def sha256_from_etag(etag: Optional[str]) -> Optional[str]:
    """The Hub's ETag for an LFS file is its sha256 (for a small git file it is a sha1, which is no use here)."""
    if etag and _SHA256_RE.match(etag.strip('"').lower()):
        return etag.strip('"').lower()
    return None


def read_state(planned: PlannedFile) -> Optional[PartialState]:
    try:
        data = json.loads(planned.state_path.read_text(encoding="utf-8"))
        return PartialState(**{k: data.get(k) for k in ("repo_id", "path", "commit", "size", "sha256")})
    except (OSError, ValueError, TypeError):
        return None


def write_state(planned: PlannedFile) -> None:
    state = PartialState(planned.item.repo_id, planned.item.path, planned.commit, planned.size, planned.sha256)
    write_atomic(planned.state_path, json.dumps(asdict(state)), durable=False)


def clear_partial(planned: PlannedFile) -> None:
    for path in (planned.part_path, planned.state_path):
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def resumable_bytes(planned: PlannedFile) -> int:
    """How many bytes of an earlier attempt can be kept: all of them if they are of the same file, else none."""
    try:
        have = planned.part_path.stat().st_size
    except OSError:
        return 0
    state = read_state(planned)
    same_file = (
        state is not None
        and state.repo_id == planned.item.repo_id
        and state.path == planned.item.path
        and state.size == planned.size
        and (state.sha256 == planned.sha256 if (state.sha256 and planned.sha256) else state.commit == planned.commit)
    )
    if not same_file or planned.size is None or have > planned.size:
        return 0
    return have


def free_bytes(folder: Path) -> int:
    """Free space on the disk that holds `folder` (or would hold it, once created)."""
    probe = Path(folder)
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check_destinations(files: list[PlannedFile]) -> None:
    """Two files of one job must not land on the same name (two repos with a "model.gguf", say)."""
    seen: dict[Path, DownloadItem] = {}
    for planned in files:
        other = seen.get(planned.dest)
        if other is not None and other != planned.item:
            raise DestinationError(
                f"{other.repo_id}/{other.path} and {planned.item.repo_id}/{planned.item.path} would both be saved "
                f"as {planned.dest.name}. Download them into different folders."
            )
        seen[planned.dest] = planned.item


def existing_file_state(dest: Path, size: Optional[int]) -> bool:
    """True when the finished file is already in place; DestinationError when another file has its name.

    A file of the announced size is taken as this download done earlier (hashing gigabytes just to list a pair
    would be slow); anything else is someone's other file, which we never overwrite.
    """
    try:
        have = dest.stat().st_size
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise DestinationError(f"Cannot check {dest}: {exc.strerror}.") from None
    if size is not None and have == size:
        return True
    raise DestinationError(
        f"A different file named {dest.name} already exists in {dest.parent}. Move or rename it, then try again."
    )


def downloaded_file(dest_dir: Path, name: str, size: Optional[int] = None) -> Optional[Path]:
    """`name` in `dest_dir` when it is there already, finished (no partial download of it pending) and, where the
    size is known, of that size; None otherwise. Get models then offers Load instead of Download."""
    dest = Path(dest_dir) / name
    try:
        have = dest.stat().st_size
    except OSError:
        return None
    if dest.with_name(dest.name + PART_SUFFIX).exists() or (size is not None and have != size):
        return None
    return dest


def check_disk_space(dest_dir: Path, needed: int) -> int:
    """The free bytes at `dest_dir`; DiskSpaceError when `needed` (plus a safety margin) does not fit."""
    free = free_bytes(dest_dir)
    if needed + DISK_MARGIN_BYTES > free:
        raise DiskSpaceError(
            f"Not enough disk space: this download needs {format_bytes(needed)} but only {format_bytes(free)} is "
            f"free in {dest_dir}. Free some space or choose another folder.",
            needed=needed,
            free=free,
        )
    return free


def format_duration(seconds: Optional[float]) -> str:
    """ "2 h 05 min", "3 min 20 s", "45 s"; "" when unknown."""
    if seconds is None or seconds != seconds or seconds < 0:
        return ""
    seconds = int(round(seconds))
    if seconds >= 3600:
        return f"{seconds // 3600} h {seconds % 3600 // 60:02d} min"
    if seconds >= 60:
        return f"{seconds // 60} min {seconds % 60:02d} s"
    return f"{seconds} s"
