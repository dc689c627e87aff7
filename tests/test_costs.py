"""Forward-pass costs are measured once per model file and settings, then read from the disk cache."""

from __future__ import annotations

from app.engine import costs
from app.engine.llama_model import LoadedModel


def test_costs_are_measured_once_and_cached(tiny_models, monkeypatch):
    target = LoadedModel(tiny_models.target, n_ctx=512, n_threads=1)
    draft = LoadedModel(tiny_models.draft, n_ctx=512, n_threads=1)
    try:
        table = costs.measure_costs(target, draft, 1, (0, 0))
        assert len(table.batch) == costs.MAX_BATCH + 1
        assert all(c > 0 for c in table.batch[1:]) and table.draft_per_token > 0
        assert target.cached == []  # measuring leaves no stray tokens in the cache

        calls = []
        monkeypatch.setattr(costs, "_measure", lambda *a, **k: calls.append(a) or [0.0, 1.0, 2.0])
        again = costs.measure_costs(target, draft, 1, (0, 0))
        assert calls == [] and again.batch == table.batch
        # Other settings are another machine configuration: measured anew.
        costs.measure_costs(target, None, 2, (0, 0))
        assert len(calls) == 1
    finally:
        target.close()
        draft.close()


def test_unmeasured_sizes_are_interpolated():
    table = costs._interpolate({1: 1.0, 2: 1.75, 4: 2.4, 8: 4.0}, 8)
    assert table[1:3] == [1.0, 1.75]
    assert table[3] == (1.75 + 2.4) / 2
    assert table[6] == 2.4 + (4.0 - 2.4) * 2 / 4
    assert costs.CostTable(table).verify(10) > table[8]  # extrapolated past the last size, growing


def test_a_contended_measurement_cannot_poison_the_table():
    # Measured while another process held the CPU: sizes 5 and 6 spiked to 10x and 28x one token.
    measured = {1: 1.0, 2: 1.77, 3: 2.36, 4: 3.02, 5: 10.59, 6: 27.95, 8: 4.4, 10: 5.1, 13: 6.2, 17: 7.7}
    table = costs._interpolate(measured, 17)
    assert table[5] <= table[8] == 4.4 and table[6] <= 4.4
    # Smaller batches never cost much more than bigger ones...
    assert all(table[n] <= 1.1 * min(table[n:]) for n in range(1, 18))
    assert costs._interpolate({1: 1.0, 2: 9.0}, 2)[2] == 2.0  # nor more than that many single passes


def test_kernel_block_sizes_survive_cleaning():
    # Measured on the 2-core CPU: a batch of 16 is cheaper than 12, the kernels working in blocks of 16. The
    # controller must see that, or it would never pick the draft length that pays most there.
    measured = {1: 1.0, 2: 1.68, 4: 2.78, 8: 6.35, 12: 8.02, 16: 7.57, 24: 11.58, 32: 12.89}
    table = costs._interpolate(measured, 32)
    assert table[16] == 7.57 and table[12] == 8.02 and table[32] == 12.89


def test_costs_of_a_gpu_run_are_never_those_of_a_cpu_run(tiny_models):
    class Model:
        path = tiny_models.target

    keys = {costs._key(Model, 1, 0, "CPU"), costs._key(Model, 1, 29, "CUDA"), costs._key(Model, 1, 29, "Vulkan"),
            costs._key(Model, 1, 12, "CUDA")}
    assert len(keys) == 4
    assert costs._key(Model, 1, 0, "CUDA") == costs._key(Model, 1, 0, "CPU")  # nothing offloaded: the CPU's costs
