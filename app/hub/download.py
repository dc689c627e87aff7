"""Download GGUF files from the Hub into the models folder: one job for a pair or a split model, with progress,
cancel, resume of partial files, size and sha256 checks, and a disk-space check before the first byte.

Sizes and checksums come from huggingface_hub (`HfApi.get_paths_info`: the LFS sha256; `get_hf_file_metadata`:
the commit, and the access check that makes a gated repo fail before anything is fetched). The bytes are fetched
over huggingface_hub's own HTTP session with a Range header, which lets us resume a `.part` file where an earlier
attempt stopped, report progress as it arrives, and stop within one chunk of a cancel.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from app.common.http_client import module_of
from app.platform import paths
from app.hub import download_plan as plan_mod
from app.hub import environment
from app.hub.client import HubClient
from app.hub.repo_files import RemoteFile
from app.hub.download_plan import DownloadItem, DownloadPlan, PlannedFile, format_bytes, format_duration
from app.hub.errors import (
    DestinationError,
    DownloadCancelled,
    HubError,
    OfflineError,
    VerificationError,
    hub_error_from,
    is_network_error,
)

HASH_BLOCK = 8 * 1024 * 1024
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0

# Destinations being written by a job of this process: a second job for the same file must not interleave bytes.
_active_destinations: set[Path] = set()
_active_lock = threading.Lock()


@dataclass(frozen=True)
class DownloadProgress:
    """A snapshot of a job, for a progress bar. Bytes count the whole job (all its files)."""

    phase: str  # "checking", "downloading", "verifying", "done"
    file_name: str
    file_index: int  # 0-based index of the current file
    file_count: int
    done_bytes: int
    total_bytes: int
    speed_bps: float = 0.0  # bytes per second over the last few seconds
    eta_s: Optional[float] = None

    @property
    def fraction(self) -> float:
        return min(1.0, self.done_bytes / self.total_bytes) if self.total_bytes else 0.0

    def facts(self) -> list[str]:
        """The snapshot in words, as the CLI and the Get models panel show it:
        ["1.0 GB / 2.0 GB", "10.0 MB/s", "1 min 40 s left", "file 1/2: m.gguf"]."""
        parts = [f"{format_bytes(self.done_bytes)} / {format_bytes(self.total_bytes)}"]
        if self.phase == "verifying":
            parts.append("verifying")
        elif self.speed_bps > 0:
            parts.append(f"{format_bytes(self.speed_bps)}/s")
            if self.eta_s is not None:
                parts.append(f"{format_duration(self.eta_s)} left")
        parts.append(
            f"file {self.file_index + 1}/{self.file_count}: {self.file_name}" if self.file_count > 1 else self.file_name
        )
        return parts


ProgressCallback = Callable[[DownloadProgress], None]


class _SpeedMeter:
    """Bytes per second over a sliding window, so the speed and time left follow the connection as it changes."""

    def __init__(self, window_s: float = 5.0):
        self.window_s = window_s
        self.samples: deque[tuple[float, int]] = deque()

    def add(self, now: float, fetched: int) -> None:
        self.samples.append((now, fetched))
        while len(self.samples) > 2 and now - self.samples[0][0] > self.window_s:
            self.samples.popleft()

    def speed(self) -> float:
        if len(self.samples) < 2:
            return 0.0
        (t0, b0), (t1, b1) = self.samples[0], self.samples[-1]
        return (b1 - b0) / (t1 - t0) if t1 - t0 > 0.05 else 0.0


class DownloadJob:
    """Fetch `items` into `dest_dir` (the app's models folder by default) as one action.

    `run()` blocks: call it from a worker thread. `cancel()` may be called from any thread (the GUI's); the job
    then stops within one chunk and raises DownloadCancelled, keeping the partial files for a later resume.
    `on_progress` is called on the job's thread, at most every `progress_interval_s` and at each phase change.
    """

    def __init__(
        self,
        items: Sequence[DownloadItem],
        dest_dir: Optional[Path] = None,
        *,
        client: Optional[HubClient] = None,
        on_progress: Optional[ProgressCallback] = None,
        cancel_event: Optional[threading.Event] = None,
        max_retries: int = 5,
        retry_wait_s: float = 1.0,
        progress_interval_s: float = 0.1,
    ):
        if not items:
            raise ValueError("a download job needs at least one file")
        self.items = tuple(items)
        self.dest_dir = Path(dest_dir) if dest_dir is not None else paths.models_dir()
        self.client = client or HubClient()
        self.on_progress = on_progress
        self.cancel_event = cancel_event or threading.Event()
        self.max_retries = max_retries
        self.retry_wait_s = retry_wait_s
        self.progress_interval_s = progress_interval_s
        self.plan: Optional[DownloadPlan] = None
        self._speed = _SpeedMeter()
        self._last_report = 0.0
        self._fetched = 0  # bytes received by this run (not counting resumed ones): the speed's basis
        self._on_disk: list[int] = []  # per file, bytes on disk (resumed ones included): the bar's basis

    # ----- control

    def cancel(self) -> None:
        self.cancel_event.set()

    @property
    def cancelled(self) -> bool:
        return self.cancel_event.is_set()

    # ----- planning

    def make_plan(self) -> DownloadPlan:
        """Ask the Hub for sizes, checksums and access, look at what is on disk, check free space.

        Fetches no file content. Raises HubError subclasses: OfflineError, NotFoundError, GatedRepoError,
        DestinationError, DiskSpaceError.
        """
        hf = environment.import_huggingface_hub()
        self.client.check_reachable()
        self._report("checking", 0, force=True)

        details: dict[tuple[str, Optional[str]], dict[str, RemoteFile]] = {}
        for key in dict.fromkeys((item.repo_id, item.revision) for item in self.items):
            wanted = [item.path for item in self.items if (item.repo_id, item.revision) == key]
            files = self.client.file_details(key[0], wanted, revision=key[1])
            details[key] = {f.path: f for f in files}

        planned: list[PlannedFile] = []
        for item in self.items:
            self._raise_if_cancelled()
            remote = details[(item.repo_id, item.revision)][item.path]
            url = hf.hf_hub_url(item.repo_id, item.path, revision=item.revision, endpoint=self.client.base_url)
            try:
                # A HEAD request: the commit to pin, and a gated or private repo refuses here, before any download.
                meta = hf.get_hf_file_metadata(url, token=self.client.request_token(), endpoint=self.client.base_url)
            except Exception as exc:
                raise hub_error_from(exc, item.repo_id, item.path) from exc
            size = remote.size if remote.size is not None else meta.size
            if remote.size is not None and meta.size is not None and remote.size != meta.size:
                raise VerificationError(
                    f"The Hub gives two sizes for {item.name} ({format_bytes(remote.size)} and "
                    f"{format_bytes(meta.size)}); it may be changing right now. Try again in a few minutes."
                )
            sha256 = remote.sha256 or plan_mod.sha256_from_etag(meta.etag)
            dest = self.dest_dir / item.name
            candidate = PlannedFile(item, dest, size, sha256, meta.commit_hash)
            done = plan_mod.existing_file_state(dest, size)
            resume = 0 if done else plan_mod.resumable_bytes(candidate)
            planned.append(PlannedFile(item, dest, size, sha256, meta.commit_hash, resume, done))

        plan_mod.check_destinations(planned)
        needed = sum(f.remaining for f in planned)
        free = plan_mod.check_disk_space(self.dest_dir, needed)
        self.plan = DownloadPlan(self.dest_dir, tuple(planned), free)
        return self.plan

    # ----- running

    def run(self) -> list[Path]:
        """Download every file not yet in place; returns the final paths, in the order of `items`."""
        plan = self.plan or self.make_plan()
        claimed = self._claim(plan)
        try:
            self.dest_dir.mkdir(parents=True, exist_ok=True)
            self._on_disk = [(f.size or 0) if f.already_done else f.resume_from for f in plan.files]
            for index, planned in enumerate(plan.files):
                if planned.already_done:
                    continue
                self._raise_if_cancelled()
                self._fetch(index, planned)
                self._verify_and_place(index, planned)
            self._report("done", len(plan.files) - 1, force=True)
            return [f.dest for f in plan.files]
        except OSError as exc:
            raise DestinationError(f"Cannot write the download in {self.dest_dir}: {exc.strerror or exc}.") from exc
        finally:
            with _active_lock:
                _active_destinations.difference_update(claimed)

    def _claim(self, plan: DownloadPlan) -> list[Path]:
        with _active_lock:
            busy = [f.dest for f in plan.files if f.dest in _active_destinations]
            if busy:
                raise DestinationError(f"{busy[0].name} is already being downloaded.")
            claimed = [f.dest for f in plan.files]
            _active_destinations.update(claimed)
            return claimed

    def _fetch(self, index: int, planned: PlannedFile) -> None:
        """Bring `planned.part_path` to the full size, resuming across dropped connections."""
        have = plan_mod.resumable_bytes(planned)
        if have == 0:
            plan_mod.clear_partial(planned)
        plan_mod.write_state(planned)
        self._on_disk[index] = have
        failures = 0
        while planned.size is None or have < planned.size:
            self._raise_if_cancelled()
            try:
                have = self._fetch_once(index, planned, have)
                if planned.size is None:
                    break  # the stream ended cleanly and no size was announced: that is the whole file
            except (HubError, OSError):
                raise
            except Exception as exc:
                if not is_network_error(exc):
                    raise hub_error_from(exc, planned.item.repo_id, planned.item.path) from exc
                new_have = planned.part_path.stat().st_size if planned.part_path.exists() else 0
                # Count only failures that made no progress: a slow, flaky line still gets there.
                failures = 0 if new_have > have else failures + 1
                have = self._on_disk[index] = new_have
                if failures > self.max_retries:
                    environment.forget_reachability()
                    raise OfflineError(
                        f"The connection to the Hugging Face Hub kept dropping while downloading {planned.item.name}. "
                        f"The {format_bytes(have)} received are kept: try again to continue where it stopped."
                    ) from exc
                if self.cancel_event.wait(self.retry_wait_s * max(1, failures)):
                    self._raise_if_cancelled()

    def _fetch_once(self, index: int, planned: PlannedFile, have: int) -> int:
        """One HTTP request from byte `have` on; returns the bytes on disk when the response ends."""
        hf = environment.import_huggingface_hub()
        from huggingface_hub.utils import build_hf_headers, hf_raise_for_status

        revision = planned.commit or planned.item.revision
        url = hf.hf_hub_url(planned.item.repo_id, planned.item.path, revision=revision, endpoint=self.client.base_url)
        library: dict[str, Any] = environment.library_info()  # library_name and library_version
        headers = build_hf_headers(token=self.client.request_token(), **library)
        headers["Accept-Encoding"] = "identity"  # sizes and ranges are about the file's bytes, not a compressed stream
        if have:
            headers["Range"] = f"bytes={have}-"
        session = hf.get_session()
        http = module_of(session)  # httpx2 or httpx, whichever the Hub client uses
        timeout = http.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)

        with session.stream("GET", url, headers=headers, timeout=timeout, follow_redirects=True) as response:
            if response.status_code >= 400:
                try:
                    hf_raise_for_status(response)
                except Exception as exc:
                    raise hub_error_from(exc, planned.item.repo_id, planned.item.path) from exc
            start = have
            if have and response.status_code != 206:
                start = 0  # the server ignored the Range header and sends the whole file: start over
            elif have and not response.headers.get("Content-Range", "").startswith(f"bytes {have}-"):
                _discard(planned)
                raise VerificationError(
                    f"The Hub resumed {planned.item.name} at the wrong place; the partial file was discarded. "
                    "Try again."
                )
            served = _announced_total(response, start)
            if planned.size is not None and served is not None and served != planned.size:
                _discard(planned)
                raise VerificationError(
                    f"{planned.item.name} should be {format_bytes(planned.size)} but the Hub is sending "
                    f"{format_bytes(served)}. Nothing was kept; try again later."
                )
            written = start
            self._on_disk[index] = written
            with open(planned.part_path, "r+b" if start else "wb") as out:
                out.seek(start)
                out.truncate()
                for chunk in response.iter_bytes():  # as the bytes arrive: progress and cancel stay responsive
                    if not chunk:
                        continue
                    if planned.size is not None and written + len(chunk) > planned.size:
                        out.close()
                        _discard(planned)
                        raise VerificationError(
                            f"{planned.item.name} is bigger than the {format_bytes(planned.size)} the Hub announced. "
                            "Nothing was kept; try again later."
                        )
                    out.write(chunk)
                    written += len(chunk)
                    self._fetched += len(chunk)
                    self._on_disk[index] = written
                    self._report("downloading", index)
                    if self.cancel_event.is_set():
                        break
        self._raise_if_cancelled()
        return written

    def _verify_and_place(self, index: int, planned: PlannedFile) -> None:
        self._report("verifying", index, force=True)
        actual_size = planned.part_path.stat().st_size
        if planned.size is not None and actual_size != planned.size:
            _discard(planned)
            raise VerificationError(
                f"{planned.item.name} arrived with {format_bytes(actual_size)} instead of {format_bytes(planned.size)}. "
                "It was discarded; try again."
            )
        if planned.sha256:
            digest = hashlib.sha256()
            with open(planned.part_path, "rb") as part:
                for block in iter(lambda: part.read(HASH_BLOCK), b""):
                    self._raise_if_cancelled()
                    digest.update(block)
            if digest.hexdigest() != planned.sha256.lower():
                _discard(planned)
                raise VerificationError(
                    f"{planned.item.name} is damaged: its checksum does not match the one on the Hub. It was "
                    "discarded; try again."
                )
        with open(planned.part_path, "rb+") as part:
            os.fsync(part.fileno())  # the bytes are on disk before the name says the file is complete
        os.replace(planned.part_path, planned.dest)
        try:
            planned.state_path.unlink()
        except FileNotFoundError:
            pass
        self._on_disk[index] = actual_size

    # ----- helpers

    def _raise_if_cancelled(self) -> None:
        if not self.cancel_event.is_set():
            return
        done = sum(self._on_disk)
        if done:
            raise DownloadCancelled(
                f"Download cancelled. The {format_bytes(done)} already downloaded are kept: download again to "
                "continue where it stopped."
            )
        raise DownloadCancelled("Download cancelled.")

    def _report(self, phase: str, index: int, force: bool = False) -> None:
        if self.on_progress is None:
            return
        now = time.monotonic()
        if phase == "downloading":
            self._speed.add(now, self._fetched)
        if not force and now - self._last_report < self.progress_interval_s:
            return
        self._last_report = now
        plan = self.plan
        count = len(plan.files) if plan else len(self.items)
        total = plan.total_bytes if plan else 0
        name = self.items[min(index, len(self.items) - 1)].name
        speed = self._speed.speed()
        done = sum(self._on_disk)
        eta = max(0.0, total - done) / speed if speed > 0 and total else None
        self.on_progress(DownloadProgress(phase, name, index, count, done, total, speed, eta))


def _announced_total(response, start: int) -> Optional[int]:
    """The full file size the response implies: Content-Range's total, or the offset plus Content-Length."""
    content_range = response.headers.get("Content-Range")
    if content_range and "/" in content_range:
        total = content_range.rsplit("/", 1)[-1].strip()
        if total.isdigit():
            return int(total)
    length = response.headers.get("Content-Length")
    if length and length.isdigit() and response.headers.get("Content-Encoding", "identity") == "identity":
        return start + int(length)
    return None


def _discard(planned: PlannedFile) -> None:
    plan_mod.clear_partial(planned)
