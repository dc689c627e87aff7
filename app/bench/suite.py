"""Benchmark: plain vs speculative decoding (fixed k and auto) on one prompt suite, interleaved, in one run.

Ratios are what we report: absolute tok/s depend on the machine and on what else it is doing, ratios measured
side by side in the same run much less. Each repetition runs every mode once, in turn, so drift in machine load
affects all modes alike; the median over repetitions is reported.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import statistics
import subprocess
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Callable, Optional

from app.common.bounded_read import read_text_bounded
from app.engine.config import GenerationConfig
from app.engine.events import FinishedEvent
from app.engine.reasoning.share import ThinkingShare
from app.engine.speculation.drafters import NgramDrafter


@dataclass
class BenchPrompt:
    name: str
    kind: str
    chat: str
    system: str = ""  # e.g. one that shows a model how to think before it answers


def paired_median(top: list[float], bottom: list[float]) -> float:
    """The median of top[i] / bottom[i] (pairs with no bottom left out; 0 when none is left)."""
    pairs = [a / b for a, b in zip(top, bottom) if b > 0]
    return statistics.median(pairs) if pairs else 0.0


@dataclass
class ModeResult:
    tokens_per_second: list[float] = field(default_factory=list)
    acceptance: list[float] = field(default_factory=list)
    tokens: list[int] = field(default_factory=list)
    histogram: dict[int, int] = field(default_factory=dict)
    thinking: ThinkingShare = field(default_factory=ThinkingShare)  # over every repetition
    # Per run, the prompt tokens read and those reused from a kept KV cache (GenerationStats.prompt_cached).
    prompt_read: list[int] = field(default_factory=list)
    prompt_cached: list[int] = field(default_factory=list)

    @property
    def median_tps(self) -> float:
        return statistics.median(self.tokens_per_second) if self.tokens_per_second else 0.0

    def median_ratio(self, base: "ModeResult") -> float:
        """Median over repetitions of this mode's tok/s over `base`'s in the same repetition. Each repetition
        runs the modes back to back, so pairing them cancels the machine's drift between repetitions (how large
        that drift can be: docs/performance.md)."""
        return paired_median(self.tokens_per_second, base.tokens_per_second)

    @property
    def median_acceptance(self) -> float:
        return statistics.median(self.acceptance) if self.acceptance else 0.0

    def to_dict(self) -> dict:
        return {
            "tokens_per_second": round(self.median_tps, 2),
            "runs_tokens_per_second": [round(x, 2) for x in self.tokens_per_second],
            "acceptance_rate": round(self.median_acceptance, 3),
            "tokens": self.tokens,
            "draft_len_histogram": dict(sorted(self.histogram.items())),
            **({"thinking": self.thinking.to_dict()} if self.thinking.reasoning.tokens else {}),
            "prompt_read": self.prompt_read,
            "prompt_cached": self.prompt_cached,
        }


# A prompts file is a few KB; a far larger one (or a device) is not read into memory.
MAX_PROMPTS_BYTES = 64 << 20


def load_prompts(path: Optional[Path] = None) -> list[BenchPrompt]:
    if path is None:
        text = resources.files("app").joinpath("data").joinpath("bench_prompts.json").read_text(encoding="utf-8")
    else:
        text = read_text_bounded(path, MAX_PROMPTS_BYTES)  # FileReadError is a ValueError
    return [BenchPrompt(p["name"], p.get("kind", ""), p["chat"], p.get("system", "")) for p in json.loads(text)]


MODE_KINDS = ("plain", "draft", "ngram", "history", "auto")


def modes_for(
    has_draft: bool,
    ngram: bool,
    k: int,
    kinds: Optional[set[str]] = None,
    history: bool = False,
    draft_ks: tuple[int, ...] = (),
) -> dict[str, dict]:
    """Mode name -> GenerationConfig overrides. 'auto' is the product's default: the controller decides.
    `kinds` keeps only some of MODE_KINDS (plain is always kept: every ratio is against it).

    `history`: the modes draw on the history drafter (a second pass, after the first left its replies there),
    adding "history k=K"; otherwise no mode reads history, so that no run copies an earlier mode's reply.
    `draft_ks`: more lengths of the fixed draft-model mode besides k (auto is set against each)."""
    modes: dict[str, dict] = {"plain": dict(speculative=False)}
    if has_draft:
        for length in sorted({k, *draft_ks}):
            modes[f"draft k={length}"] = dict(drafter="model", draft_max=length)
    if ngram or not has_draft:
        # As much evidence as llama.cpp's ngram-simple asks for (a fixed length has no estimates to go by).
        modes[f"ngram k={k}"] = dict(drafter="ngram", draft_max=k, ngram_min_match=NgramDrafter.FIXED_MIN_MATCH)
    if history:
        modes[f"history k={k}"] = dict(drafter="history", draft_max=k)
    modes["auto"] = dict(drafter="auto" if has_draft else "ngram", draft_max=None)
    for overrides in modes.values():
        overrides["history"] = history
    if kinds:
        modes = {name: o for name, o in modes.items() if name == "plain" or name.split()[0] in kinds}
    return modes


def run_suite(
    engine,
    prompts: list[BenchPrompt],
    *,
    ngram: bool,
    k: int,
    max_tokens: int,
    repeats: int,
    progress: Callable[[str], None] = lambda line: None,
    kinds: Optional[set[str]] = None,
    history: bool = False,
    on_reply: Callable[[BenchPrompt, str], object] = lambda prompt, text: None,
    draft_ks: tuple[int, ...] = (),
) -> dict[str, dict[str, ModeResult]]:
    """Every prompt in every mode, `repeats` times. `on_reply` gets each prompt's first plain reply."""
    modes = modes_for(engine.draft is not None, ngram, k, kinds, history, draft_ks)
    results: dict[str, dict[str, ModeResult]] = {p.name: {m: ModeResult() for m in modes} for p in prompts}
    names = list(modes)
    for rep in range(repeats):
        # Rotate the order each repetition: a machine that slows down (or speeds up) during the run then
        # favours no mode.
        order = names[rep % len(names) :] + names[: rep % len(names)]
        for prompt in prompts:
            for mode in order:
                result = results[prompt.name][mode]
                finished = run_once(engine, prompt, modes[mode], max_tokens, result.thinking)
                stats = finished.stats
                if rep == 0 and mode == "plain":
                    on_reply(prompt, finished.text)
                result.tokens_per_second.append(stats.tokens_per_second)
                result.acceptance.append(stats.acceptance_rate)
                result.tokens.append(stats.tokens)
                result.prompt_read.append(stats.prompt_tokens - stats.prompt_cached)
                result.prompt_cached.append(stats.prompt_cached)
                for size, count in stats.draft_len_histogram.items():
                    result.histogram[size] = result.histogram.get(size, 0) + count
                progress(
                    f"rep {rep + 1}/{repeats} {prompt.name:<12} {mode:<10} {stats.tokens_per_second:7.1f} tok/s"
                    f"  acceptance {stats.acceptance_rate:4.0%}  prompt read {stats.prompt_tokens - stats.prompt_cached}, "
                    f"{stats.prompt_cached} from cache"
                )
    return results


def run_once(
    engine, prompt: BenchPrompt, overrides: dict, max_tokens: int, thinking: Optional[ThinkingShare] = None
) -> FinishedEvent:
    """One greedy reply to `prompt` in the mode `overrides` (one of modes_for's); `thinking` tallies its thinking
    and answer."""
    config = GenerationConfig(max_tokens=max_tokens, temperature=0.0, session=f"bench-{prompt.name}", **overrides)
    finished = None
    messages = [{"role": "system", "content": prompt.system}] if prompt.system else []
    messages.append({"role": "user", "content": prompt.chat})
    for event in engine.reply(messages, config):
        if thinking is not None:
            thinking.feed(event)
        if isinstance(event, FinishedEvent):
            finished = event
    if finished is None:
        raise RuntimeError("the engine ended without a result")
    return finished


# -- llama.cpp's own example as the native reference --------------------------------------------------------------

_SPEED = re.compile(r"decoded\s+(\d+)\s+tokens in\s+([\d.]+)\s+seconds, speed:\s+([\d.]+) t/s")
_DRAFTED = re.compile(r"n_drafted\s*=\s*(\d+)")
_ACCEPT = re.compile(r"n_accept\s*=\s*(\d+)")


# Where the project's build of llama.cpp's reference tools lives when they are not on PATH.
REFERENCE_BIN_DIR = Path.home() / ".cache" / "specchat-llama-reference" / "bin"


def find_reference_tool(name: str, explicit: Optional[str] = None) -> Optional[str]:
    """A llama.cpp tool to compare against: `explicit`, else on PATH, else REFERENCE_BIN_DIR's."""
    if explicit:
        return explicit
    found = shutil.which(name)
    if found:
        return found
    default = REFERENCE_BIN_DIR / name
    return str(default) if default.is_file() else None


def reference_env(binary: str) -> dict:
    """The environment a reference tool runs in: ours, with its own directory's shared libraries first."""
    return {**os.environ, "LD_LIBRARY_PATH": str(Path(binary).parent)}


# How often a reference tool runs before its missing report counts as a failure (see run_reference_tool).
REFERENCE_ATTEMPTS = 8


def run_reference_tool(cmd: list[str], *, reports: Callable[[str], bool], timeout_s: float) -> str:
    """A llama.cpp tool's stdout and stderr, run until its output `reports` what the bench reads.

    Rule: a run that exits 0 without its timings is run again, up to REFERENCE_ATTEMPTS times. The cause is
    llama.cpp's: its tools log through a queue drained by a thread of their own, and common/log.cpp leaks that
    logger on purpose (a destructor at exit hung on Windows, upstream #22142), so nothing drains the queue at exit
    and whatever the thread had not printed yet (the timings come last) is lost. On a busy machine that thread may
    not run between the last log line and the exit: seen 3 times in 60 runs of the tiny model with three busy
    programs beside it, and 3 times in a row in one of three CI runs side by side on 2 cores (2026-12-04). A
    non-zero exit is a real failure and is not retried.
    Raises RuntimeError naming the tool, its exit status and the end of its output."""
    out, code = "", 0
    for _ in range(REFERENCE_ATTEMPTS):
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, env=reference_env(cmd[0]))
        out, code = proc.stdout + proc.stderr, proc.returncode
        if code != 0:
            break
        if reports(out):
            return out
    name = Path(cmd[0]).name
    why = f"exit {code}" if code != 0 else f"exit 0 without its timings, {REFERENCE_ATTEMPTS} times"
    raise RuntimeError(f"{name} failed ({why}): {out[-400:]}")


# llama.cpp's n-gram modes the bench compares with (its --spec-type): ngram-simple at the bench's k; ngram-mod and
# ngram-map-k with their own draft lengths, since choosing the length is part of what they do.
LLAMA_NGRAM_TYPES = ("ngram-simple", "ngram-mod", "ngram-map-k")


def run_llama_speculative(
    binary: str,
    target: Path,
    draft: Optional[Path],
    prompt_text: str,
    *,
    k: int,
    max_tokens: int,
    threads: int,
    n_ctx: int,
    spec_type: str = "ngram-simple",
) -> tuple[float, float, int]:
    """(tok/s, acceptance, tokens written) of llama.cpp's llama-speculative-simple on the same formatted prompt,
    greedy: with a draft model its draft-model mode, without one the n-gram mode `spec_type` (one of
    LLAMA_NGRAM_TYPES). Its -n bounds the tokens its target samples itself, so a run that keeps drafted tokens
    writes more than `max_tokens` (app.bench.references)."""
    cmd = [binary, "-m", str(target)]
    if draft is not None:
        cmd += ["-md", str(draft), "--spec-type", "draft-simple", "--spec-draft-n-max", str(k)]
    elif spec_type == "ngram-simple":
        cmd += ["--spec-type", spec_type, "--spec-draft-n-max", str(k)]
    else:
        cmd += ["--spec-type", spec_type]
    cmd += ["-t", str(threads), "--temp", "0", "-n", str(max_tokens), "-c", str(n_ctx), "-p", prompt_text]
    out = run_reference_tool(cmd, reports=lambda text: _SPEED.search(text) is not None, timeout_s=600)
    speed = _SPEED.search(out)
    assert speed is not None  # run_reference_tool returns only output that has it
    drafted = _DRAFTED.search(out)
    accepted = _ACCEPT.search(out)
    rate = int(accepted.group(1)) / int(drafted.group(1)) if drafted and accepted and int(drafted.group(1)) else 0.0
    return float(speed.group(3)), rate, int(speed.group(1))


def geometric_mean(values: list[float]) -> float:
    """The mean of speed ratios (positive ones; 0 when there are none)."""
    values = [v for v in values if v > 0]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else 0.0
