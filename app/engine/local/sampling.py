"""Turning logits into token choices, and the speculative-sampling acceptance rule.

One `distribution` function serves target and draft alike: speculative sampling only reproduces the target's
output distribution exactly when both distributions went through the same temperature/top-k/top-p/min-p.
Penalties for repeated tokens change the target's logits at each position by what the reply held up to that
position (a drafted token counts for the positions after it), so a draft is checked against exactly the
distribution plain decoding would have drawn from there. Log-probabilities are read from the target's raw logits.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

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


def accept_or_resample(token: int, p: np.ndarray, q: np.ndarray | None, rng: np.random.Generator) -> tuple[bool, int]:
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


@dataclass
class Penalties:
    """Penalties for tokens the reply has written so far: llama.cpp's repeat penalty (a logit divided by it when
    positive, multiplied when negative), then OpenAI's frequency (times the count) and presence (once) penalties.
    They count the reply's tokens only, not the prompt's (as vLLM and OpenAI do). One per reply."""

    presence: float = 0.0
    frequency: float = 0.0
    repeat: float = 1.0
    _counts: dict[int, int] = field(default_factory=dict)

    @classmethod
    def from_config(cls, config: GenerationConfig) -> Optional["Penalties"]:
        """None when the request asks for no penalty."""
        if config.presence_penalty == 0.0 and config.frequency_penalty == 0.0 and config.repeat_penalty == 1.0:
            return None
        return cls(config.presence_penalty, config.frequency_penalty, config.repeat_penalty)

    def add(self, token: int) -> None:
        """The reply kept `token`."""
        self._counts[token] = self._counts.get(token, 0) + 1

    def apply(self, logits: np.ndarray, ahead: Sequence[int] = ()) -> np.ndarray:
        """A penalised copy of `logits`, for the position after the kept tokens and then `ahead` (the drafted
        tokens before this position)."""
        counts = dict(self._counts)
        for token in ahead:
            counts[token] = counts.get(token, 0) + 1
        out = np.array(logits, dtype=np.float32)
        if not counts:
            return out
        ids = np.fromiter(counts.keys(), dtype=np.int64, count=len(counts))
        n = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
        seen = out[ids].astype(np.float64)
        if self.repeat != 1.0:
            seen = np.where(seen > 0, seen / self.repeat, seen * self.repeat)
        out[ids] = (seen - n * self.frequency - self.presence).astype(np.float32)
        return out


def log_probabilities(logits: np.ndarray, token: int, top: int) -> tuple[float, list[tuple[int, float]]]:
    """`token`'s log-probability under softmax(`logits`), and the `top` likeliest tokens with theirs, best first."""
    row = logits.astype(np.float64)
    peak = row.max()
    log_total = peak + np.log(np.exp(row - peak).sum())
    best: list[tuple[int, float]] = []
    if top > 0:
        top = min(top, row.shape[0])
        ids = np.argpartition(-row, top - 1)[:top]
        ids = ids[np.lexsort((ids, -row[ids]))]  # best first; ties by id, so the order is reproducible
        best = [(int(i), float(row[i] - log_total)) for i in ids]
    return float(row[token] - log_total), best
