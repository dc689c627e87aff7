"""Turning logits into token choices, and the speculative-sampling acceptance rule.

One `distribution` function serves target and draft alike: speculative sampling only reproduces the target's
output distribution exactly when both distributions went through the same temperature/top-k/top-p/min-p.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from app.engine.config import GenerationConfig


@dataclass(frozen=True)
class Sampler:
    temperature: float = 0.0
    top_k: int = 40
    top_p: float = 0.95
    min_p: float = 0.05

    @classmethod
    def from_config(cls, config: GenerationConfig) -> "Sampler":
        return cls(config.temperature, config.top_k, config.top_p, config.min_p)

    @property
    def greedy(self) -> bool:
        return self.temperature <= 0.0

    def candidates(self, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The tokens that can be drawn, in ascending id order, and their probabilities after temperature, top-k,
        top-p and min-p (in that order).

        Every step after top-k works on its k survivors instead of the whole vocabulary (152k entries for Qwen):
        sorting the vocabulary for top-p cost as much as a tenth of a CPU decode. Ids stay ascending so a draw
        over them is the same draw as over the full distribution.
        """
        n = logits.shape[0]
        if 0 < self.top_k < n:
            # Everything below the k-th largest logit is out (ties at the cut stay in, as in llama.cpp). Dividing by
            # a positive temperature keeps the order, so the cut is found on the raw logits.
            kth = np.partition(logits, n - self.top_k)[n - self.top_k]
            ids = np.flatnonzero(logits >= kth)
        else:
            ids = np.arange(n)
        scaled = logits[ids].astype(np.float64) / max(self.temperature, 1e-6)
        probs = np.exp(scaled - scaled.max())
        probs /= probs.sum()
        if 0.0 < self.top_p < 1.0:
            order = np.argsort(-probs, kind="stable")
            cumulative = np.cumsum(probs[order])
            # Keep the smallest prefix whose mass reaches top_p (at least one token).
            cut = int(np.searchsorted(cumulative, self.top_p)) + 1
            probs[order[cut:]] = 0.0
            probs /= probs.sum()
        if self.min_p > 0.0:
            probs[probs < self.min_p * probs.max()] = 0.0
            probs /= probs.sum()
        keep = probs > 0.0
        return ids[keep], probs[keep]

    def distribution(self, logits: np.ndarray) -> np.ndarray:
        """Probabilities over the whole vocabulary (see `candidates`): what speculative sampling compares."""
        ids, probs = self.candidates(logits)
        full = np.zeros(logits.shape[0], dtype=np.float64)
        full[ids] = probs
        return full

    def pick(self, logits: np.ndarray, rng: np.random.Generator) -> int:
        """The next token from logits: argmax when greedy, else a draw from the candidates."""
        if self.greedy:
            return int(np.argmax(logits))
        ids, probs = self.candidates(logits)
        return int(ids[sample_from(probs, rng)])


def sample_from(probs: np.ndarray, rng: np.random.Generator) -> int:
    # Inverse-CDF draw: exact and deterministic for a given generator state.
    cumulative = np.cumsum(probs)
    u = rng.random() * cumulative[-1]
    return int(min(np.searchsorted(cumulative, u, side="right"), len(probs) - 1))


def accept_or_resample(
    token: int, p: np.ndarray, q: np.ndarray | None, rng: np.random.Generator
) -> tuple[bool, int]:
    """The speculative-sampling step for one drafted token (Leviathan et al. / Chen et al.).

    `p` is the target's distribution at this position, `q` the drafter's (None for a deterministic proposal such
    as an n-gram lookup, i.e. q is one-hot on `token`). Accept with probability min(1, p/q); on rejection return a
    token drawn from norm(max(0, p - q)). Either way the result is distributed exactly as p.
    """
    q_tok = 1.0 if q is None else float(q[token])
    p_tok = float(p[token])
    if q_tok > 0.0 and rng.random() * q_tok < p_tok:
        return True, token
    if q is None:
        residual = p.copy()
        residual[token] = 0.0
    else:
        residual = np.maximum(p - q, 0.0)
    total = residual.sum()
    if total <= 0.0:  # p == q numerically: any draw from p is right
        return False, sample_from(p, rng)
    return False, sample_from(residual / total, rng)
