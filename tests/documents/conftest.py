"""The documents tests' shared fixture: an empty index of their own."""

from __future__ import annotations

import pytest

from app.documents.index import DocumentIndex


@pytest.fixture
def index(tmp_path):
    with DocumentIndex(tmp_path / "index.db") as opened:
        yield opened
