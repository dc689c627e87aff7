"""A chat that outgrows the context keeps its KV cache across the cut: the dropped stretch is shifted out of the
cache instead of the whole prompt being read again, and what the model computes afterwards is the same."""

from __future__ import annotations

import numpy as np
import pytest

from app.engine.local.llama_model import SHIFT_MIN_RUN, LoadedModel


@pytest.fixture
def target(tiny_models):
    model = LoadedModel(tiny_models.target, n_ctx=512, n_threads=1)
    yield model
    model.close()


def _tokens(seed: int, n: int, vocab: int) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(t) for t in rng.integers(10, vocab - 1, size=n)]


def test_a_stretch_left_out_of_the_prompt_is_shifted_out_of_the_cache_not_read_again(target):
    system, oldest, rest = (_tokens(s, n, target.n_vocab) for s, n in ((1, 20), (2, 60), (3, 120)))
    target.decode(system + oldest + rest)
    new_turn = _tokens(4, 10, target.n_vocab)
    prompt = system + rest + new_turn
    kept = target.keep_common_prefix(prompt, leave=1)
    # Everything but the new turn stays cached: the system prompt, and the later turns shifted down.
    assert kept == len(system) + len(rest)
    assert target.cached == system + rest
    target.decode(prompt[kept:], logit_rows=[len(prompt) - kept - 1])
    shifted = target.logits(len(prompt) - kept - 1).copy()
    target.truncate(0)
    target.decode(prompt, logit_rows=[len(prompt) - 1])
    fresh = target.logits(len(prompt) - 1).copy()
    # The same next-token distribution as reading the shorter prompt from scratch (RoPE shifts round slightly).
    assert int(np.argmax(shifted)) == int(np.argmax(fresh))
    assert np.allclose(shifted, fresh, atol=1e-2 * max(1.0, float(np.abs(fresh).max())))


def test_short_or_unrelated_matches_are_read_again(target):
    system, oldest, rest = (_tokens(s, n, target.n_vocab) for s, n in ((1, 20), (2, 60), (3, SHIFT_MIN_RUN - 1)))
    target.decode(system + oldest + rest)
    assert target.keep_common_prefix(system + rest + [11], leave=1) == len(system)
    target.truncate(0)
    target.decode(system + oldest)
    assert target.keep_common_prefix(system + _tokens(9, 80, target.n_vocab), leave=1) == len(system)


def test_a_batch_sequence_shifts_a_cut_chat_too(tiny_models):
    """With Requests at once above 1, a chat is kept in one of the batch's sequences: its cut is shifted there as
    the single cache does, in that sequence alone, and the next token is the one a fresh read gives."""
    from app.engine.local.batch.sequences import Rows, Sequences

    model = LoadedModel(tiny_models.target, n_ctx=1024, n_threads=1, n_seq_max=2)
    try:
        seqs = Sequences(model, 2)
        system, oldest, rest = (_tokens(s, n, model.n_vocab) for s, n in ((1, 20), (2, 60), (3, 120)))
        other = _tokens(7, 90, model.n_vocab)
        seqs.read([(1, system + oldest + rest), (0, other)])
        prompt = system + rest + _tokens(4, 10, model.n_vocab)
        kept = seqs.keep_prefix(1, prompt, leave=1)
        assert kept == len(system) + len(rest) and seqs.cached[1] == system + rest
        assert seqs.cached[0] == other  # the other sequence is left as it was
        window = seqs.decode([Rows(1, prompt[kept:], len(prompt) - kept - 1)])[0]
        shifted = window.logits(0).copy()
        seqs.truncate(1, 0)
        fresh = seqs.decode([Rows(1, prompt, len(prompt) - 1)])[0].logits(0).copy()
        assert int(np.argmax(shifted)) == int(np.argmax(fresh))
        assert np.allclose(shifted, fresh, atol=1e-2 * max(1.0, float(np.abs(fresh).max())))
    finally:
        model.close()
