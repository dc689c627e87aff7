"""Caches on disk are read back whatever they hold: damaged, hand-edited or from another version, they start afresh."""

from __future__ import annotations

import json

import pytest

from app.common.json_cache import read_cache, section, write_cache

JUNK = [
    b"[]",
    b"null",
    b"42",
    b'"text"',
    b"{",  # cut short
    b"\xff\xfe not utf-8",
    b"[" * 100_000 + b"]" * 100_000,  # nested deeper than the parser goes
    b'{"version": "3", "files": {}}',  # the version as text
    b'{"version": 2, "files": {}}',  # another version
]


@pytest.mark.parametrize("content", JUNK)
def test_a_damaged_cache_reads_as_empty(tmp_path, content):
    path = tmp_path / "cache.json"
    path.write_bytes(content)
    assert read_cache(path, 3) == {}


def test_true_is_never_version_1(tmp_path):
    path = tmp_path / "cache.json"
    path.write_text('{"version": true, "files": {}}')  # True == 1 in Python
    assert read_cache(path, 1) == {}


def test_a_cache_round_trips_and_wrong_sections_read_as_empty(tmp_path):
    path = tmp_path / "sub" / "cache.json"
    assert write_cache(path, 3, {"files": {"a": {"size": 1}}, "pairs": []})
    data = read_cache(path, 3)
    assert section(data, "files") == {"a": {"size": 1}}
    assert section(data, "pairs") == {} and section(data, "missing") == {}
    assert json.loads(path.read_text())["version"] == 3
    assert read_cache(tmp_path / "absent.json", 3) == {}


def test_an_unwritable_cache_is_reported_not_raised(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert not write_cache(blocker / "cache.json", 1, {"a": 1})  # its folder is a file
    assert not write_cache(tmp_path / "cache.json", 1, {"a": object()})  # not JSON


def test_the_costs_cache_survives_a_list_and_junk_entries(monkeypatch, tmp_path):
    """Read through what the engine asks (cached_costs), for a model file the cache keys by path, size and time."""
    from types import SimpleNamespace

    from app.engine.local import cost_cache as costs

    path = tmp_path / "forward-costs.json"
    monkeypatch.setattr(costs, "_cache_file", lambda: path)
    model = SimpleNamespace(path=tmp_path / "model.gguf")  # all a cache key reads of a loaded model
    model.path.write_bytes(b"GGUF")
    other = SimpleNamespace(path=tmp_path / "other.gguf")
    other.path.write_bytes(b"GGUF too")
    path.write_text("[]")
    assert costs.cached_costs(model, None, 1, (0, 0)) is None  # was: AttributeError
    costs.store_measurement(model, 1, 0, "CPU", [0.0, 0.01, 0.02])
    data = json.loads(path.read_text())
    data.update(
        {
            "short": [1.0],
            "text": "x",
            "nested": [[1]],
            "flag": [True, False],
            costs.model_key(other, 1, 0, "CPU"): [True, False],
        }
    )
    path.write_text(json.dumps(data))
    table = costs.cached_costs(model, None, 1, (0, 0))
    assert table is not None and table.batch == [0.0, 0.01, 0.02]
    assert costs.cached_costs(other, None, 1, (0, 0)) is None  # its entry is junk: measured again
