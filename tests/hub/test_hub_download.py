"""Downloads against the fake Hub: progress, a pair as one job, split parts, cancel and resume, dropped
connections, 404, size and checksum mismatches, disk space, and what is left on disk after each."""

from __future__ import annotations

import threading

import pytest
from fake_hf_server import payload

from app.platform import paths
from app.hub.download import DownloadJob, DownloadProgress
from app.hub.download_plan import DownloadItem
from app.hub.errors import (
    DestinationError,
    DiskSpaceError,
    DownloadCancelled,
    NotFoundError,
    OfflineError,
    VerificationError,
)

SIZE = 300 * 1024


@pytest.fixture
def hub(fake_hub):
    fake_hub.add_repo("acme/Target-GGUF", {"target-Q4_K_M.gguf": payload(SIZE, 1)})
    fake_hub.add_repo("acme/Draft-GGUF", {"draft-Q8_0.gguf": payload(SIZE // 3, 2)})
    fake_hub.add_repo(
        "acme/Split-GGUF",
        {
            "Q8_0/big-Q8_0-00001-of-00003.gguf": payload(100_000, 3),
            "Q8_0/big-Q8_0-00002-of-00003.gguf": payload(100_000, 4),
            "Q8_0/big-Q8_0-00003-of-00003.gguf": payload(50_000, 5),
        },
    )
    fake_hub.add_repo("acme/Small-GGUF", {"small.gguf": payload(2000, 6)}, lfs=False)
    return fake_hub


def data_of(hub, repo_id, path):
    return hub.find_file(repo_id, path).data


TARGET = DownloadItem("acme/Target-GGUF", "target-Q4_K_M.gguf")
DRAFT = DownloadItem("acme/Draft-GGUF", "draft-Q8_0.gguf")


def job(items, dest=None, **kwargs):
    kwargs.setdefault("retry_wait_s", 0.01)
    kwargs.setdefault("progress_interval_s", 0.0)
    return DownloadJob(items, dest, **kwargs)


def test_a_pair_downloads_as_one_job_into_the_models_folder_with_progress(hub):
    updates: list[DownloadProgress] = []
    result = job([TARGET, DRAFT], on_progress=updates.append).run()

    models = paths.models_dir()
    assert result == [models / "target-Q4_K_M.gguf", models / "draft-Q8_0.gguf"]
    assert result[0].read_bytes() == data_of(hub, TARGET.repo_id, TARGET.path)
    assert result[1].read_bytes() == data_of(hub, "acme/Draft-GGUF", "draft-Q8_0.gguf")
    assert sorted(p.name for p in models.iterdir()) == ["draft-Q8_0.gguf", "target-Q4_K_M.gguf"]  # no leftovers

    total = SIZE + SIZE // 3
    downloading = [u for u in updates if u.phase == "downloading"]
    assert downloading and all(u.total_bytes == total for u in downloading)
    done = [u.done_bytes for u in downloading]
    assert done == sorted(done) and done[-1] == total
    assert {u.file_index for u in downloading} == {0, 1} and downloading[0].file_count == 2
    assert updates[-1].phase == "done" and updates[-1].fraction == 1.0


def test_speed_and_time_left_are_reported(hub):
    hub.failures.chunk_delay_s = 0.005
    updates: list[DownloadProgress] = []
    job([TARGET], on_progress=updates.append).run()
    late = [u for u in updates if u.phase == "downloading" and u.done_bytes > SIZE // 2]
    assert late and late[-1].speed_bps > 0 and late[-1].eta_s is not None


def test_split_parts_land_side_by_side_as_one_job(hub, tmp_path):
    parts = [f"Q8_0/big-Q8_0-0000{i}-of-00003.gguf" for i in (1, 2, 3)]
    result = job([DownloadItem("acme/Split-GGUF", p) for p in parts], tmp_path).run()
    assert [p.name for p in result] == [p.split("/")[-1] for p in parts]
    assert all(p.parent == tmp_path for p in result)
    assert b"".join(p.read_bytes() for p in result) == b"".join(data_of(hub, "acme/Split-GGUF", p) for p in parts)


def test_cancel_keeps_the_partial_file_and_the_next_run_resumes_without_starting_over(hub, tmp_path):
    cancel = threading.Event()

    def cancel_halfway(progress: DownloadProgress) -> None:
        if progress.done_bytes >= SIZE // 2:
            cancel.set()

    with pytest.raises(DownloadCancelled, match="kept"):
        job([TARGET], tmp_path, on_progress=cancel_halfway, cancel_event=cancel).run()
    part = tmp_path / "target-Q4_K_M.gguf.part"
    kept = part.stat().st_size
    assert SIZE // 2 <= kept < SIZE
    assert not (tmp_path / "target-Q4_K_M.gguf").exists()  # never a half file under the real name

    requests_before = len(hub.gets())
    updates: list[DownloadProgress] = []
    [path] = job([TARGET], tmp_path, on_progress=updates.append).run()
    assert path.read_bytes() == data_of(hub, "acme/Target-GGUF", "target-Q4_K_M.gguf")
    resumed = hub.gets()[requests_before:]
    assert [r.headers.get("range") for r in resumed if r.origin == "cdn"] == [f"bytes={kept}-"]
    assert [u for u in updates if u.phase == "downloading"][0].done_bytes > kept  # the bar starts where it was
    assert not part.exists() and not (tmp_path / "target-Q4_K_M.gguf.part.json").exists()


def test_a_dropped_connection_resumes_where_it_stopped(hub, tmp_path):
    hub.failures.drop_after["target-Q4_K_M.gguf"] = [100_000, 50_000]
    [path] = job([TARGET], tmp_path).run()
    assert path.read_bytes() == data_of(hub, "acme/Target-GGUF", "target-Q4_K_M.gguf")
    ranges = [r.headers.get("range") for r in hub.gets() if r.origin == "cdn"]
    assert ranges[0] is None and len(ranges) == 3
    # Each retry asks for the rest from where the kept bytes end (at most one read chunk before the drop).
    first, second = (int(r.removeprefix("bytes=").rstrip("-")) for r in ranges[1:])
    assert 100_000 - 16 * 1024 <= first <= 100_000
    assert first + 50_000 - 16 * 1024 <= second <= first + 50_000


def test_a_connection_that_keeps_dropping_gives_up_and_keeps_what_arrived(hub, tmp_path):
    hub.failures.drop_after["target-Q4_K_M.gguf"] = [50_000] + [0] * 10
    with pytest.raises(OfflineError, match="kept dropping.*kept"):
        job([TARGET], tmp_path, max_retries=2).run()
    kept = (tmp_path / "target-Q4_K_M.gguf.part").stat().st_size
    assert 50_000 - 16 * 1024 <= kept <= 50_000

    hub.failures.drop_after.clear()  # the network is back: the next attempt finishes the same file
    [path] = job([TARGET], tmp_path).run()
    assert path.read_bytes() == data_of(hub, TARGET.repo_id, TARGET.path)
    assert hub.gets()[-1].headers.get("range") == f"bytes={kept}-"


def test_a_missing_file_is_a_404_before_anything_is_written(hub, tmp_path):
    with pytest.raises(NotFoundError, match="nope.gguf"):
        job([TARGET, DownloadItem("acme/Target-GGUF", "nope.gguf")], tmp_path).run()
    assert not hub.gets() and list(tmp_path.iterdir()) == []


def test_a_404_on_the_file_itself_is_reported(hub, tmp_path):
    hub.failures.status["target-Q4_K_M.gguf"] = 404
    with pytest.raises(NotFoundError, match="does not exist"):
        job([TARGET], tmp_path).run()


def test_a_server_sending_another_size_than_announced_is_refused(hub, tmp_path):
    hub.failures.served_extra["target-Q4_K_M.gguf"] = 1000
    with pytest.raises(VerificationError, match="should be"):
        job([TARGET], tmp_path).run()
    assert list(tmp_path.iterdir()) == []


def test_a_listing_and_a_file_that_disagree_on_size_are_refused(hub, tmp_path):
    hub.failures.announced_size["target-Q4_K_M.gguf"] = SIZE - 10
    with pytest.raises(VerificationError):
        job([TARGET], tmp_path).run()
    assert list(tmp_path.iterdir()) == []


def test_corrupted_bytes_fail_the_checksum_and_are_discarded(hub, tmp_path):
    hub.failures.corrupt.add("target-Q4_K_M.gguf")
    with pytest.raises(VerificationError, match="checksum"):
        job([TARGET], tmp_path).run()
    assert list(tmp_path.iterdir()) == []


def test_not_enough_disk_space_is_said_before_downloading(hub, tmp_path):
    hub.failures.announced_size["target-Q4_K_M.gguf"] = 10**18  # an exabyte: no disk has room
    with pytest.raises(DiskSpaceError, match="Not enough disk space.*needs 1000000 TB") as info:
        job([TARGET], tmp_path).run()
    assert info.value.needed >= 10**18
    assert not hub.gets()


def test_a_server_ignoring_range_starts_the_file_over_cleanly(hub, tmp_path):
    hub.failures.drop_after["target-Q4_K_M.gguf"] = [100_000]
    hub.failures.ignore_range = True
    [path] = job([TARGET], tmp_path).run()
    assert path.read_bytes() == data_of(hub, "acme/Target-GGUF", "target-Q4_K_M.gguf")


def test_a_finished_file_is_not_downloaded_again(hub, tmp_path):
    job([TARGET], tmp_path).run()
    before = len(hub.gets())
    job([TARGET], tmp_path).run()
    assert len(hub.gets()) == before


def test_another_file_with_the_same_name_is_never_overwritten(hub, tmp_path):
    (tmp_path / "target-Q4_K_M.gguf").write_bytes(b"mine")
    with pytest.raises(DestinationError, match="different file named target-Q4_K_M.gguf"):
        job([TARGET], tmp_path).run()
    assert (tmp_path / "target-Q4_K_M.gguf").read_bytes() == b"mine"


def test_a_partial_file_of_other_content_is_not_resumed(hub, tmp_path):
    (tmp_path / "target-Q4_K_M.gguf.part").write_bytes(b"x" * 5000)  # no record of what it is: start over
    [path] = job([TARGET], tmp_path).run()
    assert path.read_bytes() == data_of(hub, "acme/Target-GGUF", "target-Q4_K_M.gguf")


def test_a_small_git_file_without_lfs_downloads_too(hub, tmp_path):
    [path] = job([DownloadItem("acme/Small-GGUF", "small.gguf")], tmp_path).run()
    assert path.read_bytes() == data_of(hub, "acme/Small-GGUF", "small.gguf")
