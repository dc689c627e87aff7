"""The soak: `specchat-cli serve` gets every kind of hostile request (tests/perf/api_soak.py), a request that crashes
its engine process among them, mixed with well-behaved ones; each well-behaved one is answered, no hostile one is
our fault (a 5xx) but the crash, which gets one sentence, the server lives, and its memory stays bounded."""

from __future__ import annotations

import pytest

from tests.perf.api_soak import CRASH, HOSTILE, SOCKET_KINDS, soak

CRASHED = "The engine stopped (killed by SIGABRT) while answering; it is restarting."


def _check(result, well_behaved: int, rss_limit_mb: float) -> None:
    assert result.alive, result.line()
    assert result.well_behaved == well_behaved and result.answered == result.well_behaved, result.line()
    http_statuses = {key: count for key, count in result.hostile_statuses.items() if key not in SOCKET_KINDS}
    assert http_statuses and all(key.rsplit(" ", 1)[1].startswith("4") for key in http_statuses
                                 if not key.startswith(CRASH)), result.line()
    crashes = result.requests // (1 + len(HOSTILE) + len(SOCKET_KINDS))
    assert http_statuses[f"{CRASH} 500"] == crashes and result.crash_errors == [CRASHED] * crashes, result.line()
    assert len(result.restart_s) == crashes, result.line()
    assert 0 < result.peak_rss_mb < rss_limit_mb and 0 < result.peak_engine_rss_mb < rss_limit_mb, result.line()


def test_serve_survives_every_kind_of_hostile_request(tiny_models):
    result = soak(tiny_models.target, requests=2 * (1 + len(HOSTILE) + len(SOCKET_KINDS)))
    _check(result, well_behaved=2, rss_limit_mb=300)


@pytest.mark.slow
def test_serve_survives_a_thousand_mixed_requests(tiny_models):
    cycle = 1 + len(HOSTILE) + len(SOCKET_KINDS)
    requests = 1000 - 1000 % cycle  # whole rounds of every kind
    result = soak(tiny_models.target, requests=requests)
    _check(result, well_behaved=requests // cycle, rss_limit_mb=500)
    print(result.line())
