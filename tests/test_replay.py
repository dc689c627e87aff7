"""The controller on the bench suite's recorded replies (tests/perf/replay.py): deterministic, no model needed.

The recording holds Qwen2.5-Coder 1.5B's greedy replies and its cost table on the 2-core CPU, where a verify batch
of 16 costs 7.3x one token: speculation that drafts at the wrong moments is slower than plain decoding there.
"""

from __future__ import annotations

import pytest

from tests.perf.replay import Recording, best_possible, replay


@pytest.fixture(scope="module")
def recording() -> Recording:
    return Recording()


def test_auto_is_never_predicted_meaningfully_slower_than_plain(recording):
    ratios = {name: replay(recording, name) for name in recording.prompts}
    assert min(ratios.values()) >= 0.97, ratios


def test_replies_that_copy_their_input_are_predicted_well_ahead_of_plain(recording):
    # A bug fix and a rename, each returned as the whole file: mostly copied text.
    assert replay(recording, "code-fix") >= 1.4
    assert replay(recording, "code-edit") >= 1.3


def test_no_policy_beats_knowing_in_advance_which_drafts_are_right(recording):
    for name in ("code-fix", "code-edit-2", "prose"):
        assert replay(recording, name) <= best_possible(recording, name) + 1e-9
