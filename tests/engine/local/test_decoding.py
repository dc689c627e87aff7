"""Speculative decoding on the synthetic models: same output as plain decoding, honest provenance and stats."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from app.engine.config import GenerationConfig
from app.engine.local.decoding.single import generate
from app.engine.local.decoding.request import DecodeRequest
from app.engine.local.decoding.model_drafter import ModelDrafter
from app.engine.speculation.drafters import NgramDrafter
from app.engine.errors import PromptTooLongError
from app.engine.events import FinishedEvent, RoundEvent, TokenEvent
from app.engine.local.llama_model import LoadedModel
from app.engine.speculation.policy import FixedPolicy
from app.engine.local.decoding.text_stream import TextStream

PROMPTS = [
    "def fibonacci(n):\n    if n < 2:\n        return n\n",
    "The quick brown fox jumps over the lazy dog. The quick brown",
    "<|im_start|>user\nhello there<|im_end|>\n<|im_start|>assistant\n",
]


@pytest.fixture(scope="module")
def models(tiny_models):
    loaded = {
        name: LoadedModel(getattr(tiny_models, name), n_ctx=512, n_threads=1)
        for name in ("target", "draft", "draft_identical")
    }
    yield loaded
    for model in loaded.values():
        model.close()


def run(target, prompt_text, config, policy, draft=None, ngram=None, cancel=None):
    prompt = target.tokenize(prompt_text, add_special=True)
    request = DecodeRequest(prompt, config, policy, ngram=ngram, use_model=draft is not None)
    events = list(generate(target, request, draft_model=draft, cancel=cancel))
    tokens = [e for e in events if isinstance(e, TokenEvent)]
    rounds = [e for e in events if isinstance(e, RoundEvent)]
    finished = events[-1]
    assert isinstance(finished, FinishedEvent)
    return tokens, rounds, finished


@pytest.mark.parametrize("prompt", PROMPTS)
@pytest.mark.parametrize("drafter", ["draft", "draft_identical", "ngram"])
@pytest.mark.parametrize("k", [1, 4, 8])
def test_greedy_speculative_output_equals_plain(models, prompt, drafter, k):
    target = models["target"]
    config = GenerationConfig(max_tokens=48, speculative=True)
    plain_tokens, _, plain = run(
        target, prompt, GenerationConfig(max_tokens=48, speculative=False), FixedPolicy(0, "none")
    )
    if drafter == "ngram":
        spec_tokens, _, spec = run(target, prompt, config, FixedPolicy(k, "ngram"), ngram=NgramDrafter())
    else:
        spec_tokens, _, spec = run(target, prompt, config, FixedPolicy(k, "model"), draft=ModelDrafter(models[drafter]))
    assert [t.token_id for t in spec_tokens] == [t.token_id for t in plain_tokens]
    assert spec.text == plain.text
    assert {t.source for t in plain_tokens} == {"target"}
    assert plain.stats.drafted == 0


def test_identical_draft_is_always_accepted(models):
    tokens, rounds, finished = run(
        models["target"],
        PROMPTS[0],
        GenerationConfig(max_tokens=40),
        FixedPolicy(4, "model"),
        draft=ModelDrafter(models["draft_identical"]),
    )
    stats = finished.stats
    assert stats.drafted > 0 and stats.acceptance_rate == 1.0
    # Every round after the first (which drafts one: its token is the one waited for) drafts 4, keeps 4 and adds
    # the target's bonus token: 4 of every 5 tokens are draft tokens.
    assert sum(t.source == "draft" for t in tokens) == stats.accepted
    assert [r.drafted for r in rounds[:2]] == [1, 4]
    assert all(r.accepted == r.drafted for r in rounds)


def test_partial_draft_reports_honest_stats(models):
    tokens, rounds, finished = run(
        models["target"],
        PROMPTS[1],
        GenerationConfig(max_tokens=64),
        FixedPolicy(4, "model"),
        draft=ModelDrafter(models["draft"]),
    )
    stats = finished.stats
    assert 0.0 < stats.acceptance_rate < 1.0
    assert stats.accepted == sum(r.accepted for r in rounds) == sum(t.source == "draft" for t in tokens)
    assert stats.drafted == sum(r.drafted for r in rounds)
    assert stats.rounds == len(rounds)
    assert stats.tokens == len(tokens) == 64 and stats.stop_reason == "max_tokens"
    assert "".join(t.text for t in tokens) == finished.text
    assert [t.index for t in tokens] == list(range(len(tokens)))


def test_rollback_leaves_the_cache_as_a_fresh_evaluation(models, tiny_models):
    target = models["target"]
    sequence = target.tokenize(PROMPTS[0], add_special=True)
    # Evaluate the sequence followed by a rejected draft, roll back, then evaluate the next real token.
    target.truncate(0)
    target.decode(sequence[:-1])
    target.decode([sequence[-1], 7, 8, 9, 10], logit_rows=range(5))
    target.truncate(len(sequence))
    target.decode([42], logit_rows=[0])
    after_rollback = target.logits(0).copy()

    fresh = LoadedModel(tiny_models.target, n_ctx=512, n_threads=1)
    try:
        fresh.decode(sequence + [42], logit_rows=[len(sequence)])
        expected = fresh.logits(len(sequence)).copy()
    finally:
        fresh.close()
    np.testing.assert_allclose(after_rollback, expected, rtol=1e-4, atol=1e-4)
    assert int(np.argmax(after_rollback)) == int(np.argmax(expected))


def chi_square_p_value(counts: np.ndarray, probs: np.ndarray) -> float:
    """P-value of observed counts against expected probabilities (Wilson-Hilferty approximation, no SciPy)."""
    import math

    mask = probs > 0
    assert counts[~mask].sum() == 0, "drew a token the target gives zero probability"
    expected = probs[mask] * counts.sum()
    chi2 = float((((counts[mask] - expected) ** 2) / expected).sum())
    dof = int(mask.sum()) - 1
    z = ((chi2 / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


@pytest.mark.slow
@pytest.mark.parametrize("drafter", ["draft", "ngram"])
def test_speculative_sampling_matches_target_distribution(models, drafter):
    from app.engine.local.sampling import Sampler

    target = models["target"]
    config = GenerationConfig(max_tokens=2, temperature=1.5, top_k=8, top_p=1.0, min_p=0.0, seed=None)
    prompt_text = PROMPTS[1]
    prompt = target.tokenize(prompt_text, add_special=True)
    sampler = Sampler.from_config(config)
    target.truncate(0)
    target.decode(prompt, logit_rows=[len(prompt) - 1])
    p = sampler.distribution(target.logits(len(prompt) - 1).copy())

    n_samples = 3000
    counts = np.zeros(target.n_vocab)
    for seed in range(n_samples):
        cfg = GenerationConfig(**{**config.__dict__, "seed": seed})
        if drafter == "ngram":
            # A deterministic proposal: the n-gram drafter's guess is one fixed token (here, the most likely one
            # would make the test too easy, so propose the target's 3rd most likely token).
            policy = _ConstantProposal(int(np.argsort(-p)[2]))
            events = generate(target, DecodeRequest(prompt, cfg, policy, ngram=policy))
        else:
            request = DecodeRequest(prompt, cfg, FixedPolicy(1, "model"), use_model=True)
            events = generate(target, request, draft_model=ModelDrafter(models["draft"]))
        first = next(e for e in events if isinstance(e, TokenEvent))
        counts[first.token_id] += 1
    p_value = chi_square_p_value(counts, p)
    assert p_value > 0.001, f"p={p_value:.2g}: speculative samples do not follow the target's distribution"
    # And the test has teeth: samples that followed the draft's own distribution would be told apart from these.
    if drafter == "ngram":
        q = np.zeros_like(p)
        q[policy.token] = 1.0  # a deterministic proposal: all its mass on the proposed token
    else:
        draft = models["draft"]
        draft.truncate(0)
        draft.decode(prompt, logit_rows=[len(prompt) - 1])
        q = sampler.distribution(draft.logits(len(prompt) - 1).copy())
    assert np.abs(q - p).sum() > 0.1, "the draft's distribution is too close to the target's to tell apart"
    assert _p_value_against(counts, q) < 1e-6


def _p_value_against(counts: np.ndarray, probs: np.ndarray) -> float:
    """chi_square_p_value, or 0 when tokens were drawn that `probs` gives no chance at all."""
    return 0.0 if counts[probs <= 0].sum() else chi_square_p_value(counts, probs)


class _ConstantProposal(NgramDrafter):
    """An n-gram drafter and policy that always proposes one given token (a deterministic draft)."""

    def __init__(self, token: int):
        super().__init__()
        self.token = token

    def propose(self, written, k):
        from app.engine.speculation.drafters import Draft

        return Draft(tokens=[self.token], source="ngram")

    def plan(self, k_max, ngram_tokens, has_model, ngram_match=0, history_draft=None, model_behind=0):
        from app.engine.speculation.policy import Plan

        return Plan("ngram", 1, "test")

    def observe(self, *args):
        pass

    def observe_proposal(self, *args, source="ngram"):
        pass

    def begin_request(self):
        pass

    def note_threads(self, threads):
        pass


def test_cancel_from_another_thread_stops_within_one_round(models):
    target = models["target"]
    cancel = threading.Event()
    prompt = target.tokenize(PROMPTS[0], add_special=True)
    seen_after_cancel = []
    finished = None
    for event in generate(
        target,
        DecodeRequest(prompt, GenerationConfig(max_tokens=400), FixedPolicy(4, "model"), use_model=True),
        draft_model=ModelDrafter(models["draft"]),
        cancel=cancel,
    ):
        if isinstance(event, TokenEvent):
            if cancel.is_set():
                seen_after_cancel.append(event)
            elif event.index == 5:
                threading.Thread(target=cancel.set).start()
                threading.Event().wait(0.05)  # let the other thread set it
        if isinstance(event, FinishedEvent):
            finished = event
    assert finished.stats.stop_reason == "cancelled"
    assert len(seen_after_cancel) <= 5  # at most the rest of the round in flight (k + 1 tokens)
    assert finished.stats.tokens < 40


def test_full_context_stops_with_a_reason_not_an_exception(tiny_models):
    small = LoadedModel(tiny_models.target, n_ctx=48, n_threads=1)
    try:
        prompt = small.tokenize(PROMPTS[0], add_special=True)
        n_ctx = small.n_ctx  # llama.cpp pads the context to a multiple of its block size
        assert len(prompt) < n_ctx
        _, _, finished = run(
            small, PROMPTS[0], GenerationConfig(max_tokens=500), FixedPolicy(4, "ngram"), ngram=NgramDrafter()
        )
        assert finished.stats.stop_reason == "context_full"
        # The cache holds all but the last token, which is emitted without ever being evaluated.
        assert len(prompt) + finished.stats.tokens == n_ctx + 1
        with pytest.raises(PromptTooLongError, match=f"context holds {n_ctx}"):
            run(small, PROMPTS[0] * 40, GenerationConfig(), FixedPolicy(0, "none"))
    finally:
        small.close()


def test_text_stream_never_splits_a_character(models):
    target = models["target"]
    text = "naïve café — 日本語 🙂👍🏽 done"
    tokens = target.tokenize(text, add_special=False)
    assert len(tokens) > len(text) // 2  # byte-level: characters really are split across tokens
    stream = TextStream()
    pieces = [stream.feed(target.token_bytes(t)) for t in tokens] + [stream.flush()]
    assert "".join(pieces) == text
    assert not any("\ufffd" in piece for piece in pieces)


def test_a_draft_that_first_read_the_prompt_does_not_teach_what_drafting_costs(models):
    """The first draft-model round of a reply reads the whole prompt first: its time is not a draft's cost per
    token (taken as one, it made the draft model look many times dearer for the rest of the reply)."""
    target = models["target"]
    timings = []

    class Recording(FixedPolicy):
        def observe(self, plan, drafted, accepted, draft_s, verify_s):
            timings.append(draft_s if drafted else None)

    prompt = target.tokenize(PROMPTS[0], add_special=True)
    assert len(prompt) > 8
    models["draft"].truncate(0)  # as a freshly loaded draft model: nothing read yet
    for _ in generate(
        target,
        DecodeRequest(prompt, GenerationConfig(max_tokens=12), Recording(2, "model"), use_model=True),
        draft_model=ModelDrafter(models["draft"]),
    ):
        pass
    assert timings[0] == 0.0  # the round that read the prompt
    later = [t for t in timings[1:] if t is not None]
    assert len(later) >= 3 and all(t > 0 for t in later)  # the drafts that followed a draft


@pytest.mark.parametrize("copy", ["the reply", "unrelated text", "the prompt escaped"])
@pytest.mark.parametrize("k", [4, 8])
def test_drafting_from_an_escaped_copy_keeps_the_greedy_output(models, copy, k):
    # The n-gram lookup also searches an escaped copy of the prompt (a JSON string's rendering of it): whether that
    # copy holds the very reply, text the reply never writes, or the real escaping, the output is plain decoding's.
    target = models["target"]
    plain_tokens, _, plain = run(
        target, PROMPTS[0], GenerationConfig(max_tokens=48, speculative=False), FixedPolicy(0, "none")
    )
    reply = [t.token_id for t in plain_tokens]
    copies = {
        "the reply": lambda prompt: reply,
        "unrelated text": lambda prompt: list(range(40, 140)),
        "the prompt escaped": target.json_escaped,
    }
    drafter = NgramDrafter(escape=copies[copy])
    config = GenerationConfig(max_tokens=48, speculative=True)
    spec_tokens, _, spec = run(target, PROMPTS[0], config, FixedPolicy(k, "ngram"), ngram=drafter)
    assert [t.token_id for t in spec_tokens] == reply
    assert spec.text == plain.text
    if copy == "the reply":
        assert spec.stats.accepted > 0


def test_a_replys_first_token_waits_for_a_draft_of_one_at_most(models):
    """The first token is the one a person or client waits for: its round verifies one drafted token at most, even
    where the policy asks for 8 and the draft model could give them (later rounds draft what the policy asks)."""
    target = models["target"]
    drafted = []

    class Recording(FixedPolicy):
        def observe(self, plan, n_drafted, accepted, draft_s, verify_s):
            drafted.append(n_drafted)

    prompt = target.tokenize(PROMPTS[0], add_special=True)
    for _ in generate(
        target,
        DecodeRequest(prompt, GenerationConfig(max_tokens=24), Recording(8, "model"), use_model=True),
        draft_model=ModelDrafter(models["draft"]),
    ):
        pass
    assert drafted[0] == 1
    assert max(drafted[1:]) == 8


@pytest.mark.parametrize("speculative", [False, True])
def test_a_short_prompts_first_token_takes_one_forward_pass(models, monkeypatch, speculative):
    """The prompt's last part is read in the first round's pass, not in a pass of its own before it, so a short
    prompt's first token costs one forward pass, with speculation on or off; the greedy reply is the same."""
    target = models["target"]
    target.truncate(0)
    passes: list[int] = []
    decode = target.decode

    def counted(tokens, **kwargs):
        if tokens:
            passes.append(len(tokens))
        return decode(tokens, **kwargs)

    monkeypatch.setattr(target, "decode", counted)
    prompt = target.tokenize(PROMPTS[0], add_special=True)
    config = GenerationConfig(max_tokens=12, speculative=speculative)
    before_first: list[int] = []
    text = ""
    for event in generate(
        target,
        DecodeRequest(prompt, config, FixedPolicy(4, "model"), use_model=True),
        draft_model=ModelDrafter(models["draft"]),
    ):
        if isinstance(event, TokenEvent) and not before_first:
            before_first = list(passes)
        if isinstance(event, FinishedEvent):
            text = event.text
    assert len(before_first) == 1 and before_first[0] >= len(prompt)
    monkeypatch.undo()
    plain = run(target, PROMPTS[0], GenerationConfig(max_tokens=12, speculative=False), FixedPolicy(0, "none"))[2]
    assert text == plain.text
