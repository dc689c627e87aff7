"""The soak: `specchat-cli serve` gets every kind of hostile request (tests/perf/api_soak.py), a request that crashes
its engine process among them, each after a well-behaved one; each well-behaved one is answered, no hostile one is
our fault (a 5xx) but the crash, which gets one sentence, the server lives, and both its processes' memory stays
bounded."""

from __future__ import annotations

import pytest

from tests.perf.api_soak import CRASH, ROUND, SOCKET_KINDS, soak

CRASHED = "The engine stopped (killed by SIGABRT) while answering; it is restarting."


def _check(result, rounds: int, rss_limit_mb: float) -> None:
    assert result.alive, result.line()
    assert result.well_behaved == rounds * len(ROUND) // 2 == result.answered, result.line()
    http_statuses = {key: count for key, count in result.hostile_statuses.items() if key not in SOCKET_KINDS}
    assert http_statuses and all(
        key.rsplit(" ", 1)[1].startswith("4") for key in http_statuses if not key.startswith(CRASH)
    ), result.line()
    assert http_statuses[f"{CRASH} 500"] == rounds and result.crash_errors == [CRASHED] * rounds, result.line()
    assert len(result.restart_s) == rounds, result.line()
    assert 0 < result.peak_rss_mb < rss_limit_mb and 0 < result.peak_engine_rss_mb < rss_limit_mb, result.line()


@pytest.mark.slow
def test_serve_survives_every_kind_of_hostile_request(tiny_models):
    result = soak(tiny_models.target, requests=len(ROUND))
    _check(result, rounds=1, rss_limit_mb=300)


@pytest.mark.slow
def test_serve_survives_a_thousand_mixed_requests(tiny_models):
    rounds = -(-1000 // len(ROUND))  # whole rounds, at least 1,000 requests
    result = soak(tiny_models.target, requests=rounds * len(ROUND))
    _check(result, rounds=rounds, rss_limit_mb=500)
    print(result.line())
