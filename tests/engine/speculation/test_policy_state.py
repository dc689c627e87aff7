"""What a speculation policy says about itself: whether it decides by costs, whether its costs need measuring
again, and its state as a frozen record a debug view can show."""

from __future__ import annotations

import dataclasses

import pytest

from app.engine.speculation.auto_controller import AutoController
from app.engine.speculation.costs import CostTable, prior_costs
from app.engine.speculation.policy import FixedPolicy, Plan, PolicyState, SpeculationPolicy

CPU_BATCH = [0.0] + [
    x * 0.028 for x in (1.0, 1.75, 2.1, 2.4, 2.8, 3.2, 3.6, 4.0, 4.4, 4.8, 5.2, 5.6, 6.0, 6.4, 6.8, 7.2, 7.6)
]


def test_a_fixed_length_needs_no_costs_and_says_its_k():
    policy: SpeculationPolicy = FixedPolicy(4, "ngram")
    assert not policy.uses_costs and not policy.wants_fresh_costs
    assert policy.describe() == PolicyState(fixed_k=4, drafter="ngram")


def test_the_controller_wants_fresh_costs_once_single_tokens_beat_its_measured_table_by_far():
    controller: SpeculationPolicy = AutoController(CostTable(list(CPU_BATCH)), with_model=False)
    assert controller.uses_costs and not controller.wants_fresh_costs
    controller.note_threads(2)
    controller.observe(Plan("none", 0), 0, 0, 0.0, CPU_BATCH[1])  # as the table says
    assert not controller.wants_fresh_costs
    for _ in range(3):  # five times faster than the table: it was measured while the CPU was busy
        controller.observe(Plan("none", 0), 0, 0, 0.0, CPU_BATCH[1] / 5)
    assert controller.wants_fresh_costs


def test_an_estimate_never_asks_to_be_measured_again():
    controller = AutoController(prior_costs(1_000_000_000, None, on_gpu=False), with_model=False)
    controller.note_threads(2)
    for _ in range(4):
        controller.observe(Plan("none", 0), 0, 0, 0.0, 0.001)  # far faster than the placeholder
    assert not controller.wants_fresh_costs
    assert controller.describe().costs_estimated


def test_the_state_is_a_frozen_copy_of_what_the_controller_learned():
    controller = AutoController(CostTable(list(CPU_BATCH), draft_per_token=0.005), with_model=True)
    controller.note_threads(2)
    before = controller.describe()
    assert before.fixed_k is None and before.drafter == "model" and not before.costs_estimated
    assert before.threads == 2 and before.draft_s > 0 and len(before.verify_s) >= 16
    assert before.verify_s[1] / before.verify_s[0] == pytest.approx(1.75)
    for _ in range(10):  # drafts of 4 refused after the first token
        controller.observe(Plan("model", 4, kind="draft", expected=3.0), 4, 1, 0.02, 0.07)
    controller.observe_proposal(8, [1, 2, 3, 4], [1, 2, 3, 4, 5])
    after = controller.describe()
    assert after.model_rates[1] < before.model_rates[1]  # the second position is refused now
    assert dict(after.calibration)["model"] < dict(before.calibration)["model"]  # 1 kept where 3 were expected
    assert [(source, bucket) for source, bucket, _ in after.copy_rates] == [("ngram", 8)]
    assert before.copy_rates == ()  # the earlier record did not change with the controller
    with pytest.raises(dataclasses.FrozenInstanceError):
        after.stop_below = 0.5  # type: ignore[misc]
