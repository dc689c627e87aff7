"""Forward-pass costs are measured once per model file and settings, a forward pass at a time, then read from the
disk cache; until then the controller starts from an estimate."""

from __future__ import annotations

import time

import pytest

from app.engine.local import cost_cache, cost_measurement
from app.engine.speculation import costs
from app.engine.local.llama_model import LoadedModel


@pytest.mark.slow
def test_costs_are_measured_once_and_cached(tiny_models, monkeypatch):
    target = LoadedModel(tiny_models.target, n_ctx=512, n_threads=1)
    draft = LoadedModel(tiny_models.draft, n_ctx=512, n_threads=1)
    try:
        assert cost_cache.cached_costs(target, draft, 1, (0, 0)) is None
        table = cost_measurement.measure_costs(target, draft, 1, (0, 0))
        assert len(table.batch) == costs.MAX_BATCH + 1
        assert all(c > 0 for c in table.batch[1:]) and table.draft_per_token > 0
        assert not table.estimated
        assert target.cached == [] and draft.cached == []  # measuring leaves no stray tokens in the cache
        assert cost_cache.cached_costs(target, draft, 1, (0, 0)).batch == table.batch

        steps = []
        real_step = cost_measurement._ModelTiming.step
        monkeypatch.setattr(cost_measurement._ModelTiming, "step", lambda self: steps.append(1) or real_step(self))
        again = cost_measurement.measure_costs(target, draft, 1, (0, 0))
        assert steps == [] and again.batch == table.batch
        # Other settings are another machine configuration: measured anew.
        cost_measurement.measure_costs(target, None, 2, (0, 0))
        assert steps
    finally:
        target.close()
        draft.close()


def test_each_step_is_one_short_forward_pass_and_the_chat_stays_cached(tiny_models):
    """A request arriving mid-measurement waits for one step at most, and finds its chat still in the cache."""
    target = LoadedModel(tiny_models.target, n_ctx=512, n_threads=1)
    try:
        chat = target.tokenize("A chat that is already in the cache. " * 3, add_special=True)
        target.decode(chat)
        decoded: list[int] = []
        real_decode = target.decode
        target.decode = lambda tokens, **kw: decoded.append(len(tokens)) or real_decode(tokens, **kw)
        measurement = cost_measurement.CostMeasurement(target, None, 1, (0, 0))
        steps = 0
        while measurement.step():
            steps += 1
            assert len(decoded) == steps and decoded[-1] <= costs.MAX_BATCH * 2  # one forward pass per step
            assert target.cached[: len(chat)] == chat
        assert measurement.done and target.cached == chat
        assert measurement.table().batch[1] > 0
    finally:
        target.close()


def test_a_full_chat_defers_the_measurement(tiny_models):
    target = LoadedModel(tiny_models.target, n_ctx=256, n_threads=1)
    try:
        chat = (target.tokenize("words " * 200, add_special=False) * 2)[: target.n_ctx - 8]
        target.decode(chat)
        measurement = cost_measurement.CostMeasurement(target, None, 1, (0, 0))
        assert measurement.step() is False and not measurement.done
        assert target.cached == chat
    finally:
        target.close()


def test_the_estimate_before_measuring_expects_batches_to_cost_more_on_a_cpu_than_a_gpu():
    cpu = costs.prior_costs(1_000_000_000, 400_000_000, on_gpu=False)
    gpu = costs.prior_costs(1_000_000_000, 400_000_000, on_gpu=True)
    assert cpu.estimated and gpu.estimated
    assert cpu.verify(8) / cpu.verify(1) > 4 > gpu.verify(8) / gpu.verify(1)
    assert cpu.draft_per_token == 0.4 * cpu.verify(1)  # a smaller model's step reads fewer weights


def test_a_large_model_on_a_cpu_is_expected_to_verify_a_few_tokens_for_little_more_than_one():
    """Before anything is timed, a 4 GB target (an F16 copy of a small model, a 7B model at 4 bits) is taken as bound by
    memory, so drafting can start with its first reply; a 1 GB one is not."""
    large = costs.prior_costs(4_000_000_000, 1_000_000_000, on_gpu=False)
    small = costs.prior_costs(1_000_000_000, 400_000_000, on_gpu=False)
    assert large.verify(4) / large.verify(1) < 2.0 < 3.0 < small.verify(4) / small.verify(1)
    assert large.verify(8) / large.verify(1) < 3.0


def test_unmeasured_sizes_are_interpolated():
    table = costs.interpolate({1: 1.0, 2: 1.75, 4: 2.4, 8: 4.0}, 8)
    assert table[1:3] == [1.0, 1.75]
    assert table[3] == (1.75 + 2.4) / 2
    assert table[6] == 2.4 + (4.0 - 2.4) * 2 / 4
    assert costs.CostTable(table).verify(10) > table[8]  # extrapolated past the last size, growing


def test_a_contended_measurement_cannot_poison_the_table():
    # Measured while another process held the CPU: sizes 5 and 6 spiked to 10x and 28x one token.
    measured = {1: 1.0, 2: 1.77, 3: 2.36, 4: 3.02, 5: 10.59, 6: 27.95, 8: 4.4, 10: 5.1, 13: 6.2, 17: 7.7}
    table = costs.interpolate(measured, 17)
    assert table[5] <= table[8] == 4.4 and table[6] <= 4.4
    # Smaller batches never cost much more than bigger ones...
    assert all(table[n] <= 1.1 * min(table[n:]) for n in range(1, 18))
    assert costs.interpolate({1: 1.0, 2: 9.0}, 2)[2] == 2.0  # nor more than that many single passes


def test_kernel_block_sizes_survive_cleaning():
    # Measured on the 2-core CPU: a batch of 16 is cheaper than 12, the kernels working in blocks of 16. The
    # controller must see that, or it would never pick the draft length that pays most there.
    measured = {1: 1.0, 2: 1.68, 4: 2.78, 8: 6.35, 12: 8.02, 16: 7.57, 24: 11.58, 32: 12.89}
    table = costs.interpolate(measured, 32)
    assert table[16] == 7.57 and table[12] == 8.02 and table[32] == 12.89


def test_costs_of_a_gpu_run_are_never_those_of_a_cpu_run(tiny_models):
    class Model:
        path = tiny_models.target

    keys = {
        cost_cache.model_key(Model, 1, 0, "CPU"),
        cost_cache.model_key(Model, 1, 29, "CUDA"),
        cost_cache.model_key(Model, 1, 29, "Vulkan"),
        cost_cache.model_key(Model, 1, 12, "CUDA"),
    }
    assert len(keys) == 4
    assert cost_cache.model_key(Model, 1, 0, "CUDA") == cost_cache.model_key(
        Model, 1, 0, "CPU"
    )  # nothing offloaded: the CPU's costs


def test_a_cache_that_cannot_be_written_still_gives_the_measured_table(tiny_models, monkeypatch):
    monkeypatch.setattr(cost_cache, "_write_cache", lambda data: None)
    target = LoadedModel(tiny_models.target, n_ctx=512, n_threads=1)
    draft = LoadedModel(tiny_models.draft, n_ctx=512, n_threads=1)
    try:
        table = cost_measurement.measure_costs(target, draft, 1, (0, 0))
        assert table.batch[1] > 0 and table.draft_per_token > 0 and not table.estimated
        assert cost_cache.cached_costs(target, draft, 1, (0, 0)) is None  # nothing reached the disk
    finally:
        target.close()
        draft.close()


@pytest.mark.slow
def test_a_pass_timed_while_another_program_is_busy_is_timed_again(tiny_models):
    """Kept on disk, a table timed while another program held the CPU would mislead every later chat."""
    target = LoadedModel(tiny_models.target, n_ctx=512, n_threads=1)
    try:
        real_decode, busy_passes, busy_now = target.decode, [8], [False]

        def decode(tokens, **kw):  # another program starts during each of the first passes, and ends after it
            if busy_passes[0] > 0:
                busy_passes[0] -= 1
                busy_now[0] = True
                time.sleep(0.05)
            return real_decode(tokens, **kw)

        def busy() -> bool:
            was, busy_now[0] = busy_now[0], False
            return was

        target.decode = decode
        table = cost_measurement.measure_costs(target, None, 1, (0, 0), busy=busy)
        assert busy_passes == [0] and max(table.batch[1:]) < 0.05
    finally:
        target.close()


def test_a_machine_that_stays_busy_gets_a_clear_message_and_no_table(tiny_models, monkeypatch):
    monkeypatch.setattr(cost_measurement, "BUSY_WAIT_S", 0.5)
    target = LoadedModel(tiny_models.target, n_ctx=512, n_threads=1)
    try:
        try:
            cost_measurement.measure_costs(target, None, 1, (0, 0), busy=lambda: True)
        except RuntimeError as error:
            assert "another program kept the CPU busy" in str(error)
        else:
            raise AssertionError("measured on a busy machine")
        assert cost_cache.cached_costs(target, None, 1, (0, 0)) is None
        measured = cost_measurement.measure_costs(target, None, 1, (0, 0))
        # Measured before: the disk has it, and a busy machine does not hold it up.
        assert cost_measurement.measure_costs(target, None, 1, (0, 0), busy=lambda: True).batch == measured.batch
    finally:
        target.close()
