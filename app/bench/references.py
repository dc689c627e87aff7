"""llama.cpp's llama-speculative-simple as the bench's native reference, compared over the same stretch of reply.

Its -n bounds the tokens its target samples itself, not the tokens it writes: a run that keeps drafted tokens writes
past it. On code-fix at -n 64 its n-gram modes wrote 113 tokens, 54 of them drafted: the reply's first 59 tokens
are prose and the rest the copied file, so its speed covered copied text that our 64-token runs never reached
(ngram-simple 1.29x plain against our fixed n-gram's 1.02x, both keeping every drafted token). So where a reference
wrote more than our runs did, ours run again right after it for as many tokens (plain, auto and our mode of the
same kind), and the reference's ratios come from those pairs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from app.bench.suite import BenchPrompt, modes_for, paired_median, run_llama_speculative, run_once

SAME_STRETCH = 2  # tokens a reference may write past ours and still be compared with our own runs


@dataclass
class ReferenceRuns:
    """One llama.cpp mode's runs of one prompt, and ours over the same stretches where those differ."""

    tokens_per_second: list[float] = field(default_factory=list)
    acceptance_rate: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    # Our mode -> its tok/s over the reference run's stretch, one per reference run (None: same stretch as ours).
    paired: dict[str, list[Optional[float]]] = field(default_factory=dict)
    paired_acceptance: list[Optional[float]] = field(default_factory=list)  # our mode of the same kind's

    def summary(
        self, k: int, plain: list[float], own: Optional[list[float]], auto: Optional[list[float]], own_acceptance: float
    ) -> dict:
        """The report's entry: ratios paired per repetition, against our runs over the same stretch. `plain`,
        `own` (our mode of the same kind) and `auto` are our suite runs per repetition."""
        ref = self.tokens_per_second
        entry: dict = {
            "k": k,
            "tokens_per_second": round(statistics.median(ref), 2),
            "acceptance_rate": round(statistics.median(self.acceptance_rate), 3),
            "tokens": self.tokens,
        }
        entry["ratio_vs_plain"] = _paired(ref, self._ours("plain", plain))
        if own is not None:
            entry["ours_vs_llama_cpp"] = _paired(self._ours("own", own), ref)
            accepted = [a for a in self.paired_acceptance if a is not None]
            entry["ours_acceptance_rate"] = round(statistics.median(accepted) if accepted else own_acceptance, 3)
        if auto is not None:
            entry["auto_vs_llama_cpp"] = _paired(self._ours("auto", auto), ref)
        if any(x is not None for runs in self.paired.values() for x in runs):
            entry["same_stretch"] = "ours ran again over each longer stretch"
        return entry

    def _ours(self, mode: str, suite_runs: list[float]) -> list[float]:
        """Per reference run: our speed over its stretch (the suite's run of that repetition where the same)."""
        paired = self.paired.get(mode, [])
        out = []
        for i in range(len(self.tokens_per_second)):
            again = paired[i] if i < len(paired) else None
            out.append(again if again is not None else suite_runs[min(i, len(suite_runs) - 1)])
        return out


def _paired(top: list[float], bottom: list[float]) -> float:
    return round(paired_median(top, bottom), 3)


def run_references(
    engine,
    binary: str,
    prompts: list[BenchPrompt],
    formatted: dict[str, str],
    kinds: list[str],
    *,
    target: Path,
    draft: Optional[Path],
    k: int,
    max_tokens: int,
    threads: int,
    n_ctx: int,
    repeats: int,
    ngram: bool,
    log: Callable[[str], None],
) -> dict[str, dict[str, ReferenceRuns]]:
    """Every prompt through each llama.cpp mode in `kinds` ("draft", "ngram" = ngram-simple at k, "ngram-mod",
    "ngram-map-k"), `repeats` times, each followed by our runs over its stretch where it wrote more than ours.
    When the tool fails, that is said and what was measured before it is kept."""
    modes = modes_for(engine.draft is not None, ngram, k)
    reference: dict[str, dict[str, ReferenceRuns]] = {}
    for rep in range(repeats):
        for prompt in prompts:
            for kind in kinds:
                try:
                    tps, acc, written = run_llama_speculative(
                        binary,
                        target,
                        draft if kind == "draft" else None,
                        formatted[prompt.name],
                        k=k,
                        max_tokens=max_tokens,
                        threads=threads,
                        n_ctx=n_ctx,
                        spec_type="ngram-simple" if kind == "ngram" else kind,
                    )
                except (RuntimeError, OSError) as exc:
                    log(f"llama.cpp reference failed: {exc}")
                    return reference
                runs = reference.setdefault(kind, {}).setdefault(prompt.name, ReferenceRuns())
                runs.tokens_per_second.append(tps)
                runs.acceptance_rate.append(acc)
                runs.tokens.append(written)
                longer = written > max_tokens + SAME_STRETCH
                own = f"{kind} k={k}" if kind in ("draft", "ngram") else None
                for mode, name in (("plain", "plain"), ("auto", "auto"), ("own", own)):
                    stats = run_once(engine, prompt, modes[name], written).stats if longer and name in modes else None
                    runs.paired.setdefault(mode, []).append(stats.tokens_per_second if stats else None)
                    if mode == "own":
                        runs.paired_acceptance.append(stats.acceptance_rate if stats else None)
                log(
                    f"rep {rep + 1}/{repeats} {prompt.name:<12} llama.cpp {ref_label(kind, k)} {tps:7.1f} tok/s  "
                    f"acceptance {acc:4.0%}  {written} tokens" + ("  (ours again over as many)" if longer else "")
                )
    return reference


def ref_label(kind: str, k: int) -> str:
    """How a llama.cpp reference reads in the table: "draft k=4", "ngram k=4" (ngram-simple), "ngram-mod"."""
    return f"{kind} k={k}" if kind in ("draft", "ngram") else kind
