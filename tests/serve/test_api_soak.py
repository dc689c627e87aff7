"""The soak, short: `specchat-cli serve` gets every kind of hostile request (tests/perf/api_soak.py) twice, mixed
with well-behaved ones; each well-behaved one is answered, no hostile one is our fault (a 5xx), the process lives,
and its memory stays under 300 MB."""

from __future__ import annotations

import pytest

from tests.perf.api_soak import HOSTILE, SOCKET_KINDS, soak


@pytest.mark.slow
def test_serve_survives_every_kind_of_hostile_request(tiny_models):
    result = soak(tiny_models.target, requests=2 * (1 + len(HOSTILE) + len(SOCKET_KINDS)))
    assert result.alive, result.line()
    assert result.well_behaved == 2 and result.answered == result.well_behaved, result.line()
    http_statuses = [key.rsplit(" ", 1)[1] for key in result.hostile_statuses if key not in SOCKET_KINDS]
    assert http_statuses and all(status.startswith("4") for status in http_statuses), result.line()
    assert 0 < result.peak_rss_mb < 300, result.line()
