"""The sampler's draws: working on the top-k survivors only must give the draws the full-vocabulary rule gives."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.local.sampling import Sampler, sample_from


def _full_vocabulary_distribution(sampler: Sampler, logits: np.ndarray) -> np.ndarray:
    """The rule as written for the whole vocabulary: temperature, top-k, top-p, min-p."""
    scaled = logits.astype(np.float64) / sampler.temperature
    n = scaled.shape[0]
    kth = np.sort(scaled)[n - sampler.top_k]
    scaled = np.where(scaled >= kth, scaled, -np.inf)
    probs = np.exp(scaled - scaled.max())
    probs /= probs.sum()
    order = np.argsort(-probs, kind="stable")
    cut = int(np.searchsorted(np.cumsum(probs[order]), sampler.top_p)) + 1
    probs[order[cut:]] = 0.0
    probs /= probs.sum()
    probs[probs < sampler.min_p * probs.max()] = 0.0
    return probs / probs.sum()


@pytest.mark.parametrize("temperature,top_k,top_p", [(0.8, 40, 0.95), (1.5, 5, 0.5), (0.3, 200, 0.99)])
def test_draws_equal_those_from_the_full_vocabulary(temperature, top_k, top_p):
    sampler = Sampler(temperature=temperature, top_k=top_k, top_p=top_p, min_p=0.05)
    logits = np.random.default_rng(7).normal(0, 3, 5000).astype(np.float32)
    reference = _full_vocabulary_distribution(sampler, logits)
    np.testing.assert_allclose(sampler.distribution(logits), reference, rtol=1e-9, atol=1e-12)
    for seed in range(200):
        ours = sampler.pick(logits, np.random.default_rng(seed))
        theirs = sample_from(reference, np.random.default_rng(seed))
        assert ours == theirs, f"seed {seed}"


def test_ties_at_the_top_k_cut_stay_in():
    logits = np.zeros(100, dtype=np.float32)
    logits[:3] = 5.0
    ids, probs = Sampler(temperature=1.0, top_k=2, top_p=1.0, min_p=0.0).candidates(logits)
    assert list(ids) == [0, 1, 2]
    assert np.allclose(probs, 1 / 3)
