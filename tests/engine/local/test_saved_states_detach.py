"""A conversation's saved file, kept apart when a request branches from it (the copy it stands for is not made):
the branch's next save gets a file of its own, the branch left is still found, and deleting the chat deletes both.
A file another conversation has replaced since is not kept apart, so the caller copies the state out instead."""

from __future__ import annotations

from app.engine.local.kv_states.saved_states import DISK_MIN_TOKENS, SavedStates

OPENING = list(range(DISK_MIN_TOKENS))  # the same opening: the same file name for one session


def test_a_branch_left_keeps_its_file_and_the_next_save_gets_another(tmp_path):
    disk = SavedStates(tmp_path, 1 << 20)
    left = OPENING + [1, 2, 3]
    path = disk.save("api", "s", left, b"state of the branch left")
    assert path is not None and disk.detach(path, left)
    taken = OPENING + [7, 8, 9]
    assert disk.save("api", "s", taken, b"state of the branch taken") == path
    header, shared = disk.best(left, "api")
    assert header is not None and shared == len(left) and disk.load(header) == b"state of the branch left"
    assert disk.best(taken, "api")[1] == len(taken)
    disk.forget("s")
    assert not list(tmp_path.iterdir())


def test_a_file_replaced_since_is_not_kept_apart(tmp_path):
    disk = SavedStates(tmp_path, 1 << 20)
    first = OPENING + [1]
    path = disk.save("api", "s", first, b"first")
    assert path is not None
    disk.save("api", "s", OPENING + [2], b"another conversation of the same session")
    assert not disk.detach(path, first)
    assert [p.name for p in tmp_path.iterdir()] == [path.name]
