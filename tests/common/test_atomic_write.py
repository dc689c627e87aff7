"""A file SpecChat writes is the old one or the new one, never half: also when a writer that takes a file name
(a GGUF model, a picture) fails part-way."""

from __future__ import annotations

import pytest

from app.common.atomic_write import atomic_file, write_atomic


def test_a_writer_that_fails_part_way_leaves_the_old_file_and_no_leftovers(tmp_path):
    target = tmp_path / "model.gguf"
    write_atomic(target, b"the old model")
    with pytest.raises(RuntimeError), atomic_file(target) as partial:
        partial.write_bytes(b"half a mod")
        raise RuntimeError("the writer stopped")
    assert target.read_bytes() == b"the old model"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.gguf"]


def test_a_finished_file_takes_its_place_with_the_mode_asked_for(tmp_path):
    target = tmp_path / "models" / "tiny.gguf"
    with atomic_file(target, durable=False, mode=0o644) as partial:
        partial.write_bytes(b"GGUF")
    assert target.read_bytes() == b"GGUF"
    assert target.stat().st_mode & 0o777 == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["tiny.gguf"]
