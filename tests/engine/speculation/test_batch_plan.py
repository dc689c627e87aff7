"""Draft lengths decided for a batch (app.engine.speculation.batch_plan), on the cost shapes of a CPU and of
memory-bound hardware: drafts shrink as requests join where rows cost, and stay where they are nearly free."""

from __future__ import annotations

from app.engine.speculation.batch_plan import Candidate, allocate
from app.engine.speculation.costs import prior_costs

CPU = prior_costs(1_000_000_000, 500_000_000, on_gpu=False)  # a 1.5B Q4 target: a batch of n ~ n tokens
MEMORY_BOUND = prior_costs(3_600_000_000, 1_000_000_000, on_gpu=False)  # its F16 copy
GPU = prior_costs(3_600_000_000, 1_000_000_000, on_gpu=True)


def drafter(acceptance: float, model: bool = False) -> Candidate:
    """A draft of up to 8 whose every token is kept with this chance given the ones before it were."""
    return Candidate(8, tuple(sum(acceptance**i for i in range(1, j + 1)) for j in range(1, 9)), model)


COPY = drafter(0.7)


def lengths(table, n: int, candidate: Candidate = COPY) -> list[int]:
    def cost(rows: int, passes: int) -> float:
        return table.verify(rows) + passes * table.draft_per_token

    return allocate([candidate] * n, n, cost, 64 - n)


def rate(table, ks: list[int], candidate: Candidate = COPY) -> float:
    n = len(ks)
    tokens = n + sum(candidate.gains[k - 1] if k else 0.0 for k in ks)
    passes = sum(ks) if candidate.model else 0
    return tokens / (table.verify(n + sum(ks)) + passes * table.draft_per_token)


def test_drafts_shrink_as_requests_join():
    for table in (MEMORY_BOUND, GPU):
        for candidate in (COPY, drafter(0.8, model=True)):
            per_request = [lengths(table, n, candidate)[0] for n in (1, 2, 4, 8)]
            assert per_request == sorted(per_request, reverse=True) and per_request[0] > per_request[-1]


def test_drafts_stop_where_they_no_longer_pay():
    """On a CPU (a batch of n rows costs about n tokens) a middling drafter does not pay alone or in a batch."""
    for n in (1, 2, 4):
        assert lengths(CPU, n, drafter(0.6)) == [0] * n
        assert lengths(CPU, n, drafter(0.7, model=True)) == [0] * n


def test_the_step_never_expects_less_than_no_drafts_at_all():
    for table in (CPU, MEMORY_BOUND, GPU):
        for n in (1, 2, 3, 4, 8):
            for candidate in (COPY, Candidate(4, (0.3, 0.4, 0.45, 0.5), model=True)):
                ks = lengths(table, n, candidate)
                assert rate(table, ks, candidate) >= rate(table, [0] * n, candidate)


def test_a_draft_that_never_pays_is_dropped():
    hopeless = Candidate(4, (0.05, 0.06, 0.06, 0.06), model=True)
    assert lengths(CPU, 2, hopeless) == [0, 0]


def test_fixed_lengths_stay_within_the_rows_left():
    fixed = Candidate(20)
    assert allocate([fixed] * 4, 4, lambda rows, passes: float(rows), 60) == [20, 20, 20, 0]


def test_a_controller_in_a_full_batch_learns_the_machine_s_speed_and_drafts():
    """Requests that always share the batch never time a single token: their passes tell the controller how fast
    the machine is, so it does not wait for a single-token timing before drafting (RoundKind "timing")."""
    from app.engine.speculation.auto_controller import AutoController
    from app.engine.speculation.policy import Plan

    controller = AutoController(GPU, with_model=False)
    controller.note_threads(2)
    assert controller.plan(8, [1, 2, 3, 4], False, ngram_match=32).kind == "timing"
    controller.observe(Plan("none", 0), 0, 0, 0.0, 0.05 * 1.05, rows=2)  # two requests' last tokens in one pass
    assert controller.plan(8, [1, 2, 3, 4], False, ngram_match=32).kind == "draft"
