"""The speculation controller picks k from measured costs and observed acceptance, with no retuning per machine."""

from __future__ import annotations

import random

import numpy as np

from app.engine.speculation.auto_controller import AutoController
from app.engine.speculation.costs import CostTable
from app.engine.speculation.policy import Plan

# Relative batch costs measured on the 2-core CPU (Qwen2.5-Coder 1.5B Q4_K_M): batch of 2 = 1.75x, 4 = 2.4x, 9 = 4.4x.
CPU_BATCH = [0.0] + [
    x * 0.028 for x in (1.0, 1.75, 2.1, 2.4, 2.8, 3.2, 3.6, 4.0, 4.4, 4.8, 5.2, 5.6, 6.0, 6.4, 6.8, 7.2, 7.6)
]
# A GPU: verifying up to 17 tokens costs about as much as one.
GPU_BATCH = [0.0] + [0.010 * (1.0 + 0.01 * n) for n in range(17)]


def train(
    controller: AutoController, source: str, rate: float, rounds: int = 60, k: int = 8, match_len: int = 2
) -> None:
    """Feed rounds in which each drafted token is accepted independently with probability `rate` (seeded).

    N-gram proposals are scored against what the target produced, drafted or not (observe_proposal)."""
    rng = random.Random(1234)
    for _ in range(rounds):
        accepted = 0
        while accepted < k and rng.random() < rate:
            accepted += 1
        if source == "ngram":
            proposal = list(range(k))
            produced = proposal[:accepted] + ([-1] if accepted < k else [])
            controller.observe_proposal(match_len, proposal, produced)
        else:
            controller.observe(Plan(source, k, ""), k, accepted, 0.0, 0.0)


def test_cpu_costs_pause_model_speculation_and_say_why():
    controller = AutoController(CostTable(CPU_BATCH, draft_per_token=0.56 * 0.028), with_model=True)
    train(controller, "model", 0.9)
    plan = controller.plan(k_max=64, ngram_tokens=[], has_model=True)
    assert plan.drafter == "none" and plan.k == 0
    assert "verifying costs more than it saves" in plan.reason
    assert "acceptance" in plan.reason and "draft cost 0.56x" in plan.reason
    # Even perfect acceptance could not pay here, so it never wastes rounds probing.
    plans = [controller.plan(64, [], True) for _ in range(100)]
    assert all(p.drafter == "none" for p in plans)


def test_gpu_costs_pick_long_drafts_without_retuning():
    # The same acceptance that the CPU test pauses at; a draft costing 5% of a target pass, as on a GPU.
    controller = AutoController(CostTable(GPU_BATCH, draft_per_token=0.05 * 0.010), with_model=True)
    train(controller, "model", 0.9)
    plan = controller.plan(k_max=64, ngram_tokens=[], has_model=True)
    assert plan.drafter == "model"
    assert plan.k >= 6


def test_ngram_drafts_pay_on_cpu_when_text_repeats():
    controller = AutoController(CostTable(CPU_BATCH), with_model=False)
    train(controller, "ngram", 0.95)
    plan = controller.plan(k_max=64, ngram_tokens=list(range(12)), has_model=False, ngram_match=2)
    assert plan.drafter == "ngram" and plan.k >= 4
    # With no earlier occurrence to copy there is nothing to draft: plain decoding.
    assert controller.plan(64, [], False).drafter == "none"


def test_low_acceptance_pauses_then_probes_and_comes_back():
    controller = AutoController(CostTable(GPU_BATCH, draft_per_token=0.3 * 0.010), with_model=True, probe_every=10)
    train(controller, "model", 0.02, rounds=80)
    plans = [controller.plan(64, [], True) for _ in range(30)]
    paused = [p for p in plans if p.drafter == "none"]
    probes = [p for p in plans if p.drafter == "model"]
    assert paused and "accepted too rarely" in paused[0].reason
    assert 2 <= len(probes) <= 4 and all(p.k <= 2 for p in probes)
    # The text turns predictable: probes succeed and speculation resumes with longer drafts.
    train(controller, "model", 1.0, rounds=40, k=2)
    plan = controller.plan(64, [], True)
    assert plan.drafter == "model" and plan.k >= 3


def test_a_draft_model_far_behind_the_text_waits_until_a_probe_is_worth_its_catch_up():
    """A probe makes the draft model read every token since it last drafted (the whole prompt at first). Under
    load a 48-token reply lost 11% to one such probe: it waits until the rounds paused cover its cost."""

    def probes(behind: int, rounds: int) -> int:
        controller = AutoController(CostTable(GPU_BATCH, draft_per_token=0.3 * 0.010), with_model=True, probe_every=10)
        train(controller, "model", 0.02, rounds=80)
        return sum(controller.plan(64, [], True, model_behind=behind).drafter == "model" for _ in range(rounds))

    assert probes(behind=2, rounds=30) >= 2  # caught up: probed every 10 paused rounds, as before
    assert probes(behind=400, rounds=30) == 0  # 400 tokens to read cost about 36 rounds' worth
    assert probes(behind=400, rounds=400) >= 1  # once the paused time covers it tenfold, it is probed


# An F16 copy of the 1.5B target, measured on the same CPU (memory-bound: a batch of 5 costs 2.16x one token), and
# the 0.5B draft at 0.28x a target token.
F16_BATCH = [0.0] + [
    0.1 * x for x in (1.0, 1.73, 1.92, 2.03, 2.16, 2.27, 2.64, 3.0, 3.19, 3.37, 3.56, 3.75, 3.97, 4.2, 4.43, 4.66, 4.9)
]


def test_a_fresh_chat_tries_the_draft_model_where_its_usual_acceptance_would_pay():
    """On a memory-bound target the draft model pays at its usual acceptance: a new chat starts drafting with it
    at once (at 0.7 it waited for a probe that a 64-token reply never reached: 13.5 against 16.7-19.1 tok/s on
    code). On a compute-bound CPU it still never starts."""
    memory_bound = AutoController(CostTable(F16_BATCH, draft_per_token=0.028), with_model=True)
    first = memory_bound.plan(k_max=64, ngram_tokens=[], has_model=True)
    assert first.drafter == "model" and first.k >= 2
    compute_bound = AutoController(CostTable(CPU_BATCH, draft_per_token=0.64 * 0.028), with_model=True)
    assert compute_bound.plan(k_max=64, ngram_tokens=[], has_model=True).drafter == "none"


def test_k_is_bounded_by_room_and_remaining_tokens():
    controller = AutoController(CostTable(GPU_BATCH, draft_per_token=0.001), with_model=True)
    train(controller, "model", 1.0)
    assert controller.plan(k_max=3, ngram_tokens=[], has_model=True).k <= 3
    assert controller.plan(k_max=0, ngram_tokens=[], has_model=True).k == 0


def test_untested_positions_follow_the_deepest_tested_one():
    """After only short drafts, the controller still learns that copying text makes long drafts pay."""
    controller = AutoController(CostTable(CPU_BATCH), with_model=False)
    for _ in range(40):  # drafts of 4, always fully accepted: positions 4+ are never tested
        controller.observe_proposal(5, [1, 2, 3, 4], [1, 2, 3, 4])
    plan = controller.plan(k_max=64, ngram_tokens=list(range(16)), has_model=False, ngram_match=5)
    assert plan.drafter == "ngram" and plan.k >= 8


def test_ngram_acceptance_is_tracked_by_match_length():
    controller = AutoController(CostTable(CPU_BATCH), with_model=False)
    train(controller, "ngram", 0.05)  # short (2-token) matches: coincidences, rarely right
    for _ in range(40):
        controller.observe_proposal(6, list(range(8)), list(range(8)))  # long matches: copied text
    assert controller.plan(64, list(range(16)), False, ngram_match=2).drafter == "none"
    assert controller.plan(64, list(range(16)), False, ngram_match=6).drafter == "ngram"


def test_failed_probes_back_off_so_unpredictable_text_costs_almost_nothing():
    controller = AutoController(CostTable(GPU_BATCH, draft_per_token=0.3 * 0.010), with_model=True, probe_every=10)
    train(controller, "model", 0.02, rounds=80)
    probes = 0
    for _ in range(2000):
        plan = controller.plan(64, [], True)
        if plan.drafter == "model":
            probes += 1
            controller.observe(plan, plan.k, 0, 0.0, 0.0)  # the probe fails: still unpredictable
    # A fixed gap of 10 would probe 200 times; doubling gaps (capped) probe a handful of times plus one per cap.
    assert 5 <= probes <= 15


def test_ngram_proposals_are_scored_while_speculation_is_paused():
    """A reply that starts copying its input turns n-gram drafting on at once, without waiting for a probe."""
    controller = AutoController(CostTable(CPU_BATCH), with_model=False, probe_every=10_000)
    for _ in range(30):  # 2-token matches that are coincidences: paused, and every proposal is wrong
        plan = controller.plan(64, [7, 8], False, ngram_match=2)
        assert plan.drafter == "none"
        controller.observe(plan, 0, 0, 0.0, 0.0)
        controller.observe_proposal(2, [7, 8], [5])
    # Copying begins: each paused round's proposal turns out right, though nothing was drafted.
    plans = []
    for _ in range(12):
        plans.append(controller.plan(64, list(range(20)), False, ngram_match=2))
        controller.observe(plans[-1], 0, 0, 0.0, 0.0)
        controller.observe_proposal(2, list(range(20)), [0])
    assert plans[0].drafter == "none" and plans[-1].drafter == "ngram"


def test_batches_that_cost_more_than_measured_stop_the_drafting_they_made_look_good():
    # The table says every batch up to 17 costs about one token (a GPU); on this machine a batch of 9 costs 9.
    controller = AutoController(CostTable(GPU_BATCH), with_model=False)
    train(controller, "ngram", 0.8, match_len=40)
    assert controller.plan(8, list(range(40)), False, ngram_match=40).k == 8
    for _ in range(5):
        controller.observe(Plan("ngram", 8, "", match_len=40), 8, 8, 0.0, 9 * GPU_BATCH[1])
    # The sizes not tried yet are assumed off by as much as those that were: no smaller draft pays either.
    assert controller.plan(8, list(range(40)), False, ngram_match=40).drafter == "none"


def test_copy_statistics_start_afresh_with_each_reply():
    # One reply copied a file whole; the next edits every line. What the first taught must not size the second's
    # drafts, while the draft model's acceptance (a property of the chat's kind of text) is kept.
    fresh = AutoController(CostTable(CPU_BATCH), with_model=True)
    used = AutoController(CostTable(CPU_BATCH), with_model=True)
    train(used, "ngram", 1.0, rounds=80, k=30, match_len=40)
    train(used, "model", 0.2)
    assert used.plan(64, list(range(40)), True, ngram_match=40).k > fresh.plan(64, list(range(40)), True, 40).k
    used.begin_request()
    assert used.plan(64, list(range(40)), False, ngram_match=40) == fresh.plan(64, list(range(40)), False, 40)
    assert used.model.overall() < 0.5


def test_drafts_that_keep_falling_short_of_expectations_are_scaled_down():
    """Estimates are picked when they look best, so they run high; the controller checks its own predictions."""
    controller = AutoController(CostTable(CPU_BATCH), with_model=False)
    train(controller, "ngram", 0.97, match_len=40)
    first = controller.plan(64, list(range(40)), False, ngram_match=40)
    assert first.drafter == "ngram" and first.expected > 3
    for _ in range(20):  # each long draft keeps only one token, far fewer than it promised
        plan = controller.plan(64, list(range(40)), False, ngram_match=40)
        controller.observe(plan, plan.k, min(1, plan.k), 0.0, 0.0)
    assert controller.calibration("ngram") < 0.6  # rounds it paused fade it back a little
    assert controller.plan(64, list(range(40)), False, ngram_match=40).k < first.k


def test_one_refused_draft_does_not_stop_drafting_for_the_rest_of_the_reply():
    """Only drafts move the calibration, so a refused draft that paused drafting must fade, or the reply never
    drafts again however well its proposals would have done."""
    controller = AutoController(CostTable(CPU_BATCH), with_model=False)
    plan = controller.plan(64, list(range(8)), False, ngram_match=8)
    assert plan.drafter == "ngram"
    controller.observe(plan, plan.k, 0, 0.0, 0.0)  # refused outright
    controller.observe_proposal(8, list(range(8)), [-1])
    assert controller.plan(64, list(range(8)), False, ngram_match=8).drafter == "none"
    drafted_again = False
    for i in range(60):  # paused rounds whose proposals are right 5 times in 6: drafting would pay
        plan = controller.plan(64, list(range(8)), False, ngram_match=8)
        if plan.drafter == "ngram" and plan.kind != "probe":
            drafted_again = True
            break
        controller.observe(plan, 0, 0, 0.0, 0.0)  # a probe counts as a plain round here
        controller.observe_proposal(8, list(range(8)), [-1] if i % 6 == 5 else [0])
    assert drafted_again


def test_a_guess_that_copying_resumes_after_an_edit_waits_for_evidence():
    """Most such guesses are wrong (an edit is often more than one token), so a refused draft of several tokens
    would cost more than the guess is worth; once guesses in this reply prove right, they are drafted."""
    controller = AutoController(CostTable(CPU_BATCH), with_model=False)
    assert controller.plan(64, list(range(8)), False, ngram_match=0).drafter == "none"
    for _ in range(6):
        controller.observe_proposal(0, list(range(8)), list(range(8)))
    assert controller.plan(64, list(range(8)), False, ngram_match=0).drafter == "ngram"


def test_a_draft_models_confidence_stop_follows_what_the_target_kept():
    from app.engine.local.decoding.model_drafter import acceptance_bound

    controller = AutoController(CostTable(GPU_BATCH, draft_per_token=0.001), with_model=True)
    start = controller.stop_below
    plan = Plan("model", 8, kind="draft", stop_below=start)
    for _ in range(5):  # refused midway: drafts should stop sooner
        controller.observe(plan, 8, 3, 0.01, 0.05)
    assert controller.stop_below > start
    raised = controller.stop_below
    for _ in range(5):  # stopped early and kept whole: they may go on longer
        controller.observe(Plan("model", 8, kind="draft", stop_below=raised), 4, 4, 0.01, 0.05)
    assert controller.stop_below < raised
    # A sure draft scores near 1, a spread-out one far lower.
    assert acceptance_bound(np.array([0.98, 0.01, 0.01])) > 0.7 > acceptance_bound(np.full(50, 0.02))


def test_new_text_is_not_probed_for_copies_on_coincidental_short_matches():
    """Each such probe verified a batch of 3 (2.8x one token under load) for nothing: 3-4% of a 48-token reply of new
    code. A longer match, where copying starts, is still probed."""

    def probes(match_len: int) -> int:
        controller = AutoController(CostTable(CPU_BATCH), with_model=False, probe_every=10)
        controller.note_threads(2)
        count = 0
        for _ in range(200):
            plan = controller.plan(64, [7, 8, 9], False, ngram_match=match_len)
            count += plan.kind == "probe"
            controller.observe(plan, plan.k, 0, 0.0, CPU_BATCH[plan.k + 1])
            controller.observe_proposal(match_len, [7, 8, 9], [5])
        return count

    assert probes(2) == probes(3) == 0
    assert probes(6) >= 2


def test_a_copy_right_over_a_long_run_is_drafted_to_the_end_at_once_and_short_again_once_it_breaks():
    # A GPU-like table, every size measured: a batch of 64 costs 2.3x one token, so a copy that is right pays to 63.
    batch = [0.0] + [0.010 * (1.0 + 0.02 * (n - 1)) for n in range(1, 65)]
    controller = AutoController(CostTable(batch), with_model=False)
    passage = list(range(100, 163))  # 63 tokens of the prompt still to copy
    first = controller.plan(63, passage, False, ngram_match=40)
    assert first.drafter == "ngram" and first.k <= 31  # no run of the copy seen yet: a draft of the usual length
    for _ in range(2):  # the reply copies the passage, 20 tokens a round
        controller.observe_proposal(40, passage[:20], passage[:20])
    long = controller.plan(63, passage, False, ngram_match=64)
    assert long.drafter == "ngram" and long.k == 63
    # An edit: the proposal's third token was wrong. The next match bridges the edit, but drafts go short again.
    controller.observe_proposal(64, passage[:20], passage[:2] + [7])
    again = controller.plan(63, passage, False, ngram_match=64)
    assert again.k <= 31
