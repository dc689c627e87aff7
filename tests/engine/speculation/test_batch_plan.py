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


UNPREDICTABLE = Candidate(0)  # its policy drafts nothing this round (paused: its drafts were not being kept)


def fair_lengths(table, candidates: list[Candidate]) -> list[int]:
    def cost(rows: int, passes: int) -> float:
        return table.verify(rows) + passes * table.draft_per_token

    return allocate(candidates, len(candidates), cost, 64 - len(candidates), fair=True)


def test_a_copying_request_does_not_slow_the_one_beside_it():
    """Without the rule, the request that copies drafts and the other one writes slower than with no drafts: a
    person's chat beside an agent's, or a burst that lasts as long as its slowest request."""
    for table in (MEMORY_BOUND, GPU):
        unfair = allocate([COPY, UNPREDICTABLE], 2, lambda rows, passes, t=table: t.verify(rows), 62)
        assert unfair[0] > 0  # what the step's rate alone would do
        assert fair_lengths(table, [COPY, UNPREDICTABLE]) == [0, 0]


def test_requests_that_all_gain_still_draft_together():
    for table in (MEMORY_BOUND, GPU):
        ks = fair_lengths(table, [COPY] * 4)
        assert all(k > 0 for k in ks) and rate(table, ks) > rate(table, [0] * 4)
        for candidate in (COPY, drafter(0.8, model=True), drafter(0.95, model=True)):
            assert fair_lengths(table, [candidate] * 4) == lengths(table, 4, candidate)


def test_with_the_rule_every_request_keeps_its_pace_without_drafts():
    weak = drafter(0.35, model=True)
    for table in (CPU, MEMORY_BOUND, GPU):
        for mix in ([COPY, weak], [COPY, COPY, weak, weak], [drafter(0.9), weak, UNPREDICTABLE]):
            ks = fair_lengths(table, mix)
            passes = sum(k for k, c in zip(ks, mix) if c.model)
            seconds = table.verify(len(mix) + sum(ks)) + passes * table.draft_per_token
            for k, c in zip(ks, mix):
                assert (1 + (c.gains[k - 1] if k else 0.0)) / seconds >= 1 / table.verify(len(mix)) - 1e-9


def test_a_request_reading_its_prompt_is_not_slowed_by_another_s_draft():
    """Requests sent together reach the engine one after another: the first one's drafts would hold up the
    others' first tokens while their prompts are read."""
    for table in (MEMORY_BOUND, GPU):

        def cost(rows: int, passes: int, t=table) -> float:
            return t.verify(rows) + passes * t.draft_per_token

        alone = allocate([COPY], 1 + 64, cost, 63, fair=True)
        assert alone[0] > 0  # a draft that pays for itself, with only prompt rows beside it that gain nothing
        assert allocate([COPY], 1 + 64, cost, 63, fair=True, readers=1) == [0]
