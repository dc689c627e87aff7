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
    from app.engine.local import cost_cache as costs

    path = tmp_path / "forward-costs.json"
    monkeypatch.setattr(costs, "_cache_file", lambda: path)
    path.write_text("[]")
    assert costs._read_cache() == {}  # was: AttributeError
    path.write_text(json.dumps({"version": costs._CACHE_VERSION, "good": [0.0, 0.01, 0.02], "short": [1.0],
                                "text": "x", "nested": [[1]], "flag": [True, False]}))
    assert costs._read_cache() == {"good": [0.0, 0.01, 0.02]}
