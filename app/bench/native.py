"""`specchat-cli bench --plain-vs-native`: our plain decoding against llama.cpp's own `llama-completion`, sampling
against greedy, and a long prompt's time to first token, measured interleaved in one run.

Each repetition runs every contender once, in a rotated order, and the report gives the median of the paired
per-repetition ratios: a machine that slows down during the run shifts both sides of a pair alike. Same prompt,
threads and context size on both sides; llama-completion runs with its own defaults otherwise.
"""

from __future__ import annotations

import random
import re
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from app.bench.suite import run_reference_tool
from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent, TokenEvent

GENERATION_PROMPT = (
    "# A small library for reading and writing CSV files\n\nimport csv\nimport io\n\n\n"
    'def read_rows(path):\n    """Yield each row of the CSV file at `path` as a dict."""\n'
)
LONG_PROMPT_TOKENS = 1500
SAMPLING: dict[str, Any] = {"temperature": 0.8, "top_k": 40, "top_p": 0.95}
_WORDS = (
    "the model reads every token of the prompt once before it writes its first word and a long prompt "
    "makes that wait the longest part of a reply on a small machine so it has to be as fast as llama cpp "
    "itself code review notes function variable return value list loop file error test case"
).split()

_PROMPT_EVAL = re.compile(r"prompt eval time =\s*([\d.]+) ms /\s*(\d+) tokens")
_EVAL = re.compile(r"(?<!prompt )eval time =\s*([\d.]+) ms /\s*(\d+) runs")
_SAMPLING = re.compile(r"sampling time =\s*([\d.]+) ms")


@dataclass
class NativeRun:
    """What llama-completion reported: prompt tokens and seconds, generated tokens (after the first) and the
    seconds they took, decoding plus sampling."""

    prompt_tokens: int
    prompt_s: float
    runs: int
    generation_s: float

    @property
    def tokens_per_second(self) -> float:
        return self.runs / self.generation_s if self.generation_s > 0 else 0.0


def run_llama_completion(
    binary: str, model: Path, prompt: str, *, n_predict: int, threads: Optional[int], n_ctx: int, timeout_s: float = 900
) -> NativeRun:
    """One run; `threads` None leaves llama.cpp its own default. Raises subprocess.TimeoutExpired past
    `timeout_s` (the process is killed)."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", encoding="utf-8", delete=False) as handle:
        handle.write(prompt)
        prompt_file = handle.name
    try:
        cmd = [
            binary,
            "-m",
            str(model),
            "-f",
            prompt_file,
            "-n",
            str(n_predict),
            *(["-t", str(threads)] if threads is not None else []),
            "-c",
            str(n_ctx),
            "--temp",
            "0",
            "--ignore-eos",
            "-no-cnv",
            "-s",
            "1",
        ]
        out = run_reference_tool(
            cmd, reports=lambda text: bool(_PROMPT_EVAL.search(text) and _EVAL.search(text)), timeout_s=timeout_s
        )
    finally:
        Path(prompt_file).unlink(missing_ok=True)
    prompt_eval, evals, sampling = _PROMPT_EVAL.search(out), _EVAL.search(out), _SAMPLING.search(out)
    assert prompt_eval is not None and evals is not None  # run_reference_tool returns only output that has them
    sampling_ms = float(sampling.group(1)) if sampling else 0.0
    return NativeRun(
        int(prompt_eval.group(2)),
        float(prompt_eval.group(1)) / 1000,
        int(evals.group(2)),
        (float(evals.group(1)) + sampling_ms) / 1000,
    )


def _ours(engine, prompt: str, config: GenerationConfig) -> tuple[float, float, int]:
    """(decode tok/s, seconds from the call to the first token, prompt tokens) of one plain reply."""
    started = time.perf_counter()
    first: Optional[float] = None
    for event in engine.complete(prompt, config):
        if isinstance(event, TokenEvent) and first is None:
            first = time.perf_counter()
        elif isinstance(event, FinishedEvent):
            stats = event.stats
            return stats.tokens_per_second, (first or time.perf_counter()) - started, stats.prompt_tokens
    raise RuntimeError("the engine ended without a result")


def long_prompt(engine, seed: int, tokens: int = LONG_PROMPT_TOKENS) -> str:
    """About `tokens` tokens of text, different for each seed so that no run can reuse another's cache."""
    rng = random.Random(seed)
    words = [rng.choice(_WORDS) for _ in range(tokens)]
    text = " ".join(words)
    while len(engine.target.tokenize(text, add_special=True)) > tokens:
        words = words[: -max(1, len(words) // 200)]
        text = " ".join(words)
    return text


def _summary(
    ratios: list[float],
    ours: list[float] | None = None,
    theirs: list[float] | None = None,
    lower_is_better: bool = False,
) -> dict:
    """The median of paired ratios, their range, and the ratio of each side's best run: on a shared machine other
    work only ever slows a run down, so the best runs are the least disturbed pair."""
    summary = {"median": statistics.median(ratios), "min": min(ratios), "max": max(ratios), "ratios": ratios}
    if ours and theirs:
        pick = min if lower_is_better else max
        summary["best_vs_best"] = pick(ours) / pick(theirs)
    return summary


def run_plain_vs_native(
    engine,
    binary: str,
    model: Path,
    *,
    threads: int,
    n_ctx: int,
    max_tokens: int,
    repeats: int,
    long_repeats: int,
    progress: Callable[[str], None],
) -> dict:
    greedy = GenerationConfig(max_tokens=max_tokens, speculative=False, ignore_eos=True)
    # Warm up once, untimed: the first decodes after a load allocate (llama-completion warms up too).
    _ours(engine, GENERATION_PROMPT, GenerationConfig(max_tokens=4, speculative=False))
    rows: dict[str, list[float]] = {"ours": [], "llama": [], "sampling": []}
    contenders = list(rows)
    for rep in range(repeats):
        for name in contenders[rep % 3 :] + contenders[: rep % 3]:
            if name == "llama":
                tps = run_llama_completion(
                    binary, model, GENERATION_PROMPT, n_predict=max_tokens, threads=threads, n_ctx=n_ctx
                ).tokens_per_second
            elif name == "ours":
                tps = _ours(engine, GENERATION_PROMPT, greedy)[0]
            else:
                sampled = GenerationConfig(
                    max_tokens=max_tokens, speculative=False, ignore_eos=True, seed=rep, **SAMPLING
                )
                tps = _ours(engine, GENERATION_PROMPT, sampled)[0]
            rows[name].append(tps)
            progress(f"rep {rep + 1}/{repeats} {name:<9} {tps:6.1f} tok/s")
    long_rows: dict[str, list[float]] = {"ours": [], "llama": []}
    prompt_tokens = {"ours": 0, "llama": 0}
    for rep in range(long_repeats):
        text = long_prompt(engine, seed=rep, tokens=min(LONG_PROMPT_TOKENS, engine.n_ctx - 32))
        for name in ("ours", "llama") if rep % 2 == 0 else ("llama", "ours"):
            if name == "llama":
                run = run_llama_completion(binary, model, text, n_predict=1, threads=threads, n_ctx=n_ctx)
                seconds, prompt_tokens["llama"] = run.prompt_s, run.prompt_tokens
            else:
                _, seconds, prompt_tokens["ours"] = _ours(
                    engine, text, GenerationConfig(max_tokens=1, speculative=False, ignore_eos=True)
                )
            long_rows[name].append(seconds)
            progress(f"long prompt rep {rep + 1}/{long_repeats} {name:<6} {seconds:6.2f} s to the first token")
    return {
        "threads": threads,
        "n_ctx": n_ctx,
        "max_tokens": max_tokens,
        "repeats": repeats,
        "plain_tokens_per_second": rows,
        "plain_vs_llama": _summary([o / t for o, t in zip(rows["ours"], rows["llama"])], rows["ours"], rows["llama"]),
        "sampling_vs_greedy": _summary(
            [s / o for s, o in zip(rows["sampling"], rows["ours"])], rows["sampling"], rows["ours"]
        ),
        "long_prompt": {
            "prompt_tokens": prompt_tokens,
            "seconds": long_rows,
            # Below 1 is faster: our time to the first token over llama.cpp's prompt evaluation.
            "ttft_vs_llama": _summary(
                [o / t for o, t in zip(long_rows["ours"], long_rows["llama"])],
                long_rows["ours"],
                long_rows["llama"],
                lower_is_better=True,
            ),
        },
    }


def print_native_report(report: dict) -> None:
    def line(label: str, summary: dict) -> str:
        return (
            f"{label:<44} {summary['median']:.3f}x median of {len(summary['ratios'])} paired runs "
            f"(range {summary['min']:.3f}-{summary['max']:.3f}); best run against best run "
            f"{summary['best_vs_best']:.3f}x"
        )

    rows = report["plain_tokens_per_second"]
    print(f"Plain decoding, {report['max_tokens']} tokens, {report['threads']} threads, context {report['n_ctx']}:")
    print(
        f"  ours greedy {statistics.median(rows['ours']):.1f} tok/s, llama-completion "
        f"{statistics.median(rows['llama']):.1f} tok/s, ours sampling {statistics.median(rows['sampling']):.1f} "
        f"tok/s (medians)"
    )
    print(line("  ours greedy / llama-completion", report["plain_vs_llama"]))
    print(line("  ours sampling (T 0.8, top-k 40, top-p 0.95) / greedy", report["sampling_vs_greedy"]))
    lp = report["long_prompt"]
    print(
        f"Long prompt ({lp['prompt_tokens']['ours']} tokens ours, {lp['prompt_tokens']['llama']} llama.cpp): "
        f"time to first token {statistics.median(lp['seconds']['ours']):.2f} s, llama.cpp's prompt evaluation "
        f"{statistics.median(lp['seconds']['llama']):.2f} s"
    )
    print(line("  ours / llama.cpp (below 1 is faster)", lp["ttft_vs_llama"]))
